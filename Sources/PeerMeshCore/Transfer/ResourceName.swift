/// Turns a name that came from the network into a safe file name inside the receiving directory.
public enum ResourceName {
    /// The longest sanitised name, in UTF-8 bytes (file systems allow 255; room is left for a collision suffix).
    public static let maximumBytes = 200
    /// The name used when nothing usable is left.
    public static let fallback = "resource"

    /// A single path component that can never point outside the directory it is joined to: the last component
    /// of `raw` (either slash), without control characters or NUL, without leading dots (no `..`, no hidden
    /// files) or surrounding spaces, at most `maximumBytes` UTF-8 bytes (keeping a short extension).
    public static func sanitize(_ raw: String) -> String {
        let lastComponent = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in lastComponent.unicodeScalars where scalar.value >= 0x20 && scalar.value != 0x7f {
            scalars.append(scalar)
        }
        var name = String(scalars).trimmingSpaces()
        while name.hasPrefix(".") { name.removeFirst() }
        name = name.trimmingSpaces()
        guard !name.isEmpty else { return fallback }
        guard name.utf8.count > maximumBytes else { return name }
        let dot = name.lastIndex(of: ".")
        let ext = dot.map { String(name[$0...]) }.flatMap { $0.utf8.count <= 16 ? $0 : nil } ?? ""
        var stem = ext.isEmpty ? name : String(name[..<dot!])
        while stem.utf8.count + ext.utf8.count > maximumBytes { stem.removeLast() }
        return stem.trimmingSpaces().isEmpty ? fallback + ext : stem + ext
    }

    /// The `attempt`-th alternative for a name already taken: `photo.jpg` → `photo (2).jpg`.
    public static func alternative(_ name: String, attempt: Int) -> String {
        guard attempt > 1 else { return name }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot]) (\(attempt))\(name[dot...])"
        }
        return "\(name) (\(attempt))"
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var scalars = Substring(self)
        while scalars.first?.isWhitespace == true { scalars.removeFirst() }
        while scalars.last?.isWhitespace == true { scalars.removeLast() }
        return String(scalars)
    }
}
