import PeerMeshRoom
import FoundationEssentials
import NIOConcurrencyHelpers
import PeerMesh
import PeerMeshCore
#if canImport(Glibc)
import Glibc
#endif

/// Files a page is sending into the room: announced over the WebSocket (`upload`), then PUT one by one into a private
/// folder on disk, and sent as one batch as `peermesh send` sends files — from the moment they are announced: each
/// file goes into the mesh as it is written (`GrowingFile`), so the page's upload and the room's send overlap. The
/// page never holds their bytes, and neither does the room: they go from the browser's disk to ours in the socket's
/// own pace.
final class WebUploads: Sendable {
    /// One announced upload.
    struct Upload: Sendable {
        /// Its id: the PUTs' path names it.
        let id: String
        let files: [OfferedFile]
        /// How far each file is written; the room's send reads behind it.
        let growing: [GrowingFile]
        let folder: URL
        /// Indexes whose PUT has begun (each file is PUT once: a PUT that fails ends the upload).
        var claimed: Set<Int> = []
        /// The page that announced it: when it goes, an unfinished upload goes too.
        let owner: ObjectIdentifier

        /// Whether the page has handed over every file (an empty file counts once its PUT began).
        var handedOver: Bool { files.indices.allSatisfy { claimed.contains($0) && growing[$0].isComplete } }
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

    /// Registers an upload of `files` (names as the page has them: `holiday/img1.jpg` for a folder) and creates them,
    /// empty, so that they can be opened for sending before their bytes arrive.
    func begin(_ files: [OfferedFile], owner: ObjectIdentifier) throws -> Upload {
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
            for file in files {
                let url = folder.appendingPathComponent(file.name)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else { throw PeerMeshError(.fileAccess, "\(file.name): \(String(cString: strerror(errno)))") }
                close(descriptor)
            }
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw CLIError("Cannot prepare \(folder.path) for the files: \(reasonText(error))")
        }
        let upload = Upload(id: id, files: files, growing: files.map { GrowingFile(expectedSize: UInt64($0.size)) },
                            folder: folder, owner: owner)
        uploads.withLockedValue { $0[id] = upload }
        return upload
    }

    /// Where file `index` of upload `id` goes, and who is told how far it got (it knows the size the file must have).
    func target(_ id: String, index: Int) -> Result<(URL, GrowingFile), Refusal> {
        uploads.withLockedValue { uploads in
            guard let upload = uploads[id] else { return .failure(Refusal(status: 404, message: "No such upload (it was sent, or its page went away).")) }
            guard upload.files.indices.contains(index), !upload.claimed.contains(index) else {
                return .failure(Refusal(status: 409, message: "File \(index) of this upload is not expected."))
            }
            uploads[id]?.claimed.insert(index)
            let file = upload.files[index]
            return .success((upload.folder.appendingPathComponent(file.name), upload.growing[index]))
        }
    }

    /// Upload `id` is over: sent, or it cannot be (a file did not arrive whole, the page went away, the members
    /// declined it). A file still arriving is abandoned with `reason` — the send reading it fails with it, and its
    /// PUT is refused — and the folder goes. True when it was still there.
    @discardableResult
    func drop(_ id: String, because reason: PeerMeshError) -> Bool {
        guard let upload = uploads.withLockedValue({ $0.removeValue(forKey: id) }) else { return false }
        upload.growing.forEach { $0.abandon(reason) }
        try? FileManager.default.removeItem(at: upload.folder)
        return true
    }

    /// The page `owner` went away: its uploads not handed over in full are dropped (they cannot be sent); those that
    /// were go on.
    func abandon(by owner: ObjectIdentifier) {
        let gone = uploads.withLockedValue { uploads in
            uploads.values.filter { $0.owner == owner && !$0.handedOver }.map(\.id)
        }
        for id in gone { drop(id, because: PeerMeshError(.sourceChanged, "The page that was sending it went away before handing all of it over; send it again from the page.")) }
    }

    /// The files of an upload as a batch, in the order the page listed them, each read as it arrives.
    static func batch(of upload: Upload) -> FileBatch {
        let items = zip(upload.files, upload.growing).map { file, growing in
            FileBatch.Item(url: upload.folder.appendingPathComponent(file.name), name: file.name, size: file.size, growing: growing)
        }
        var tops: [Substring] = []
        for file in upload.files {
            let top = file.name.split(separator: "/")[0]
            if !tops.contains(top) { tops.append(top) }
        }
        // Named as `FileBatch` names what `peermesh send` was given: the one file or folder, else a count.
        return FileBatch(items: items, label: tops.count == 1 ? String(tops[0]) : "\(items.count) files")
    }

    /// Most files one upload takes.
    static let maximumFiles = 10_000

    /// A path inside the upload's folder: relative, no empty, `.` or `..` part, no NUL, at most 4096 bytes.
    static func isRelativeName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 4096, !name.hasPrefix("/"), !name.contains("\0") else { return false }
        return name.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty && $0 != "." && $0 != ".." }
    }
}
