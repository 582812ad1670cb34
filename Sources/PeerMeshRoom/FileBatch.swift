import FoundationEssentials
import PeerMesh
#if canImport(Glibc)
import Glibc
#endif

/// What one `/send` or `send --file` sends: files and whole folders, as the list of files that go (a folder's
/// files keep their place under the folder's name, `holiday/day 1/a.jpg`, so they arrive as a folder).
package struct FileBatch: Sendable, Equatable {
    /// One file of the batch.
    package struct Item: Sendable, Equatable {
        /// Where it is here.
        package var url: URL
        /// The name it is sent under: the file's own name, or its path under the folder that was named.
        package var name: String
        /// Its size in bytes.
        package var size: Int64
        /// Set while the file is still arriving (a page's upload): it is sent as it is written.
        package var growing: GrowingFile? = nil

        /// Made of its parts, in the order they are declared.
        package init(url: URL, name: String, size: Int64, growing: GrowingFile? = nil) {
            self.url = url
            self.name = name
            self.size = size
            self.growing = growing
        }
    }

    /// The files, in the order they go (a folder's sorted by path).
    package var items: [Item]
    /// How the batch is called in lines and on the status line: the file's or folder's name, or `3 files`.
    package var label: String

    /// Bytes in all.
    package var totalBytes: Int64 { items.reduce(0) { $0 + $1.size } }

    /// The files under `urls`: each a file or a folder (whose files are found at any depth; hidden ones and links
    /// are left out, as a person copying a folder expects). Throws a sentence that names what cannot be sent.
    package init(_ urls: [URL]) throws(CLIError) {
        let manager = FileManager.default
        var items: [Item] = []
        for url in urls {
            var isDirectory = false
            guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw CLIError("Cannot read \(url.path): check the path and its permissions.")
            }
            guard isDirectory else {
                items.append(try Self.item(url, name: url.lastPathComponent))
                continue
            }
            let folder = url.standardizedFileURL
            guard let relativePaths = Self.regularFiles(under: folder.path) else {
                throw CLIError("Cannot read the folder \(url.path): check its permissions.")
            }
            var found: [Item] = []
            for relative in relativePaths {
                found.append(try Self.item(folder.appendingPathComponent(relative), name: folder.lastPathComponent + "/" + relative))
            }
            guard !found.isEmpty else { throw CLIError("The folder \(url.path) has no files to send.") }
            items += found.sorted { $0.name < $1.name }
        }
        guard !items.isEmpty else { throw CLIError("Name a file or folder to send.") }
        self.items = items
        if urls.count == 1 {
            label = urls[0].standardizedFileURL.lastPathComponent
        } else {
            label = "\(items.count) files"
        }
    }

    /// A batch of files already listed (sent again after a restart: `OutgoingList`).
    package init(items: [Item], label: String) {
        self.items = items
        self.label = label
    }

    /// The regular files under `root` as paths relative to it, in name order: hidden files and folders, and
    /// symbolic links, left out (links are not followed); nil when `root` cannot be read.
    package static func regularFiles(under root: String) -> [String]? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: root) else { return nil }
        var files: [String] = []
        for name in names.sorted() where !name.hasPrefix(".") {
            var info = stat()
            guard lstat(root + "/" + name, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG: files.append(name)
            case S_IFDIR: files += (regularFiles(under: root + "/" + name) ?? []).map { name + "/" + $0 }
            default: continue
            }
        }
        return files
    }

    private static func item(_ url: URL, name: String) throws(CLIError) -> Item {
        guard FileManager.default.isReadableFile(atPath: url.path),
              let size = fileSize(atPath: url.path) else {
            throw CLIError("Cannot read \(url.path): check the path and its permissions.")
        }
        return Item(url: url, name: name, size: size)
    }

    /// `"notes.txt" (1.2 KiB)`, `folder "holiday" (12 files, 30 MiB)` or `3 files (5 MiB)`: what is about to go.
    package var description: String { describe(withSize: true) }

    /// `"notes.txt"`, `folder "holiday" (12 files)` or `3 files`: what went (its size was said when it started).
    package var name: String { describe(withSize: false) }

    private func describe(withSize: Bool) -> String {
        let bytes = withSize ? NumberText.bytes(totalBytes) : nil
        if items.count == 1, !items[0].name.contains("/") { return "\"\(label)\"" + (bytes.map { " (\($0))" } ?? "") }
        if items.allSatisfy({ $0.name.hasPrefix(label + "/") }) {
            return "folder \"\(label)\" (\(items.count) files" + (bytes.map { ", \($0))" } ?? ")")
        }
        return "\(items.count) files" + (bytes.map { " (\($0))" } ?? "")
    }
}
