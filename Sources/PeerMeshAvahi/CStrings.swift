/// Calls `body` with C strings for both arguments; nil stays NULL (Avahi's "use the default").
func withCStrings<R>(_ a: String?, _ b: String?, _ body: (UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> R) -> R {
    func one<T>(_ s: String?, _ f: (UnsafePointer<CChar>?) -> T) -> T {
        guard let s else { return f(nil) }
        return s.withCString { f($0) }
    }
    return one(a) { pa in one(b) { pb in body(pa, pb) } }
}
