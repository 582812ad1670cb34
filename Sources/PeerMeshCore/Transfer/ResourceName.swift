/// Turns a name that came from the network into a safe file name inside the receiving directory.
public enum ResourceName {
    /// The longest sanitised name, in UTF-8 bytes (file systems allow 255; room is left for a collision suffix).
    public static let maximumBytes = 200
    /// The name used when nothing usable is left.
    public static let fallback = "resource"
    /// The most folders a name may keep above its file (`a/b/c/file` keeps three).
    public static let maximumFolders = 8

    /// A relative path inside the receiving directory that can never point outside it: the name's components
    /// (either slash separates them), each made safe as `sanitize` makes a single name; components that are empty,
    /// `.` or `..` are dropped, and at most `maximumFolders` folders are kept above the file (the outermost ones, so
    /// every file of a deep folder still lands under that folder).
    /// A folder sent file by file (`holiday/day 1/a.jpg`) so arrives as a folder; a plain name stays as it is.
    public static func sanitizePath(_ raw: String) -> String {
        let parts = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).map(String.init)
        let file = sanitize(parts.last ?? "")
        let folders = parts.dropLast().compactMap { part -> String? in
            let folder = sanitize(part)
            // `..`, `.` and names of only dots or hidden characters come back as the fallback: drop them.
            return folder == fallback && part.trimmingSpaces() != fallback ? nil : folder
        }
        return (folders.prefix(maximumFolders) + [file]).joined(separator: "/")
    }

    /// A single path component that can never point outside the directory it is joined to: the last component
    /// of `raw` (either slash), without control characters (C0, DEL, C1) or bidirectional controls (which make
    /// `report\u{202E}fdp.exe` look like `reportexe.pdf`), without leading dots (no `..`, no hidden files) or
    /// surrounding spaces, at most `maximumBytes` UTF-8 bytes (keeping a short extension).
    public static func sanitize(_ raw: String) -> String {
        let lastComponent = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in lastComponent.unicodeScalars where !isHidden(scalar) {
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

    /// Characters a file name must not carry, nor a terminal show as they are: controls (C0, DEL, C1), and the
    /// invisible ones that reorder or break what is shown (bidirectional marks and overrides, line separators).
    public static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069, 0x2028, 0x2029: true
        default: false
        }
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
