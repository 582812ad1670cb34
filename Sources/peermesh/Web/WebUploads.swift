import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// Files a page is sending into the room: announced over the WebSocket (`upload`), then PUT one by one into a private
/// folder on disk, then sent as one batch as `peermesh send` sends files. The page never holds their bytes, and
/// neither does the room: they go from the browser's disk to ours in the socket's own pace.
final class WebUploads: Sendable {
    /// One announced upload.
    struct Upload: Sendable {
        /// The request that announced it (answered `done` or `failed` once the batch is sent).
        let request: String
        let files: [OfferedFile]
        /// One member's key ID, or nil for everyone.
        let to: String?
        let folder: URL
        /// Indexes PUT in full.
        var arrived: Set<Int> = []
        /// Indexes being PUT now (one connection each).
        var arriving: Set<Int> = []
        /// The page that announced it: when it goes, an unfinished upload goes too.
        let owner: ObjectIdentifier
    }

    /// Why a PUT has nowhere to go.
    struct Refusal: Error, Equatable {
        let status: Int
        let message: String
    }

    /// The folder uploads wait in, one folder each (0700).
    let root: URL
    private let uploads = NIOLockedValueBox<[String: Upload]>([:])

    /// Uploads wait under `root`; what an earlier run left there is removed (a page that is gone cannot finish it).
    init(root: URL) {
        self.root = root
        try? FileManager.default.removeItem(at: root)
    }

    /// Registers an upload of `files` (names as the page has them: `holiday/img1.jpg` for a folder) and returns its id.
    func begin(_ files: [OfferedFile], to member: String?, request: String, owner: ObjectIdentifier) throws -> String {
        guard !files.isEmpty else { throw CLIError("Nothing to send: pick or drop at least one file.", exitCode: 2) }
        guard files.count <= Self.maximumFiles else { throw CLIError("\(files.count) files are more than one send takes (\(Self.maximumFiles)); send them in parts.", exitCode: 2) }
        var seen = Set<String>()
        for file in files {
            guard Self.isRelativeName(file.name) else {
                throw CLIError("\"\(file.name)\" is not a file name a page may send (empty, absolute, or with . or .. in it).", exitCode: 2)
            }
            guard file.size >= 0, seen.insert(file.name).inserted else { throw CLIError("\"\(file.name)\" is listed twice or with a negative size.", exitCode: 2) }
        }
        // "a" and "a/b" cannot both be: one would have to be a file and a folder.
        for name in seen {
            var folder = name
            while let slash = folder.lastIndex(of: "/") {
                folder = String(folder[..<slash])
                if seen.contains(folder) { throw CLIError("\"\(folder)\" is both a file and a folder of \"\(name)\".", exitCode: 2) }
            }
        }
        let id = UUID().uuidString.lowercased()
        let folder = root.appendingPathComponent(id)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            chmod(root.path, 0o700)
        } catch {
            throw CLIError("Cannot prepare \(folder.path) for the files: \(reasonText(error))")
        }
        uploads.withLockedValue { $0[id] = Upload(request: request, files: files, to: member, folder: folder, owner: owner) }
        return id
    }

    /// Where file `index` of upload `id` goes, and how many bytes it must have.
    func target(_ id: String, index: Int) -> Result<(URL, Int64), Refusal> {
        uploads.withLockedValue { uploads in
            guard let upload = uploads[id] else { return .failure(Refusal(status: 404, message: "No such upload (it was sent, or its page went away).")) }
            guard upload.files.indices.contains(index), !upload.arrived.contains(index), !upload.arriving.contains(index) else {
                return .failure(Refusal(status: 409, message: "File \(index) of this upload is not expected."))
            }
            uploads[id]?.arriving.insert(index)
            let file = upload.files[index]
            let url = upload.folder.appendingPathComponent(file.name)
            do {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            } catch {
                return .failure(Refusal(status: 507, message: "Cannot store \"\(file.name)\": \(reasonText(error))"))
            }
            return .success((url, file.size))
        }
    }

    /// Records file `index` as arrived in full; returns the upload when that was its last file (it is no longer
    /// listed: the caller sends it).
    func arrived(_ id: String, index: Int) -> Upload? {
        uploads.withLockedValue { uploads in
            uploads[id]?.arriving.remove(index)
            uploads[id]?.arrived.insert(index)
            guard let upload = uploads[id], upload.arrived.count == upload.files.count else { return nil }
            uploads[id] = nil
            return upload
        }
    }

    /// A file of upload `id` did not arrive whole (the page cancelled it, its connection broke, the disk was full):
    /// the upload is dropped with its files; true when it was still there.
    func drop(_ id: String) -> Bool {
        guard let upload = uploads.withLockedValue({ $0.removeValue(forKey: id) }) else { return false }
        try? FileManager.default.removeItem(at: upload.folder)
        return true
    }

    /// The page `owner` went away: its unfinished uploads are dropped with their files; returns their ids.
    func abandon(by owner: ObjectIdentifier) -> [String] {
        let gone = uploads.withLockedValue { uploads in
            let gone = uploads.filter { $0.value.owner == owner }
            gone.keys.forEach { uploads[$0] = nil }
            return gone
        }
        gone.values.forEach { try? FileManager.default.removeItem(at: $0.folder) }
        return Array(gone.keys)
    }

    /// The files of a finished upload as a batch: its top-level files and folders, in the order the page listed them.
    static func batch(of upload: Upload) throws -> FileBatch {
        var tops: [String] = []
        for file in upload.files {
            let top = String(file.name.split(separator: "/")[0])
            if !tops.contains(top) { tops.append(top) }
        }
        return try FileBatch(tops.map { upload.folder.appendingPathComponent($0) })
    }

    /// Most files one upload takes.
    static let maximumFiles = 10_000

    /// A path inside the upload's folder: relative, no empty, `.` or `..` part, no NUL, at most 4096 bytes.
    static func isRelativeName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 4096, !name.hasPrefix("/"), !name.contains("\0") else { return false }
        return name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }
}
