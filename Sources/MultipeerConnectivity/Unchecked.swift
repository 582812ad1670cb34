/// Carries a value that is not `Sendable` (a delegate, a Foundation stream, an app's closure) to the queue that
/// uses it. MC's API is not `Sendable`; each use says which queue owns the value.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A weak reference kept under a lock (sessions, advertisers and assistants refer to each other without owning).
struct UncheckedWeak<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?
    init(_ object: Object?) { self.object = object }
}
