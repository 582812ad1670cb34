import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import PeerMeshCore

// The per-transfer records `TransferCenter` keeps: values in its dictionaries, confined to the session's event loop.
// File I/O completions find their transfer again by key (an outgoing ID is never reused; an incoming record carries
// a serial, because a resumed transfer gets a new record under the same key).

/// A resource we send.
struct OutgoingResource {
    let id: UInt64
    let peer: PeerID
    let name: String
    let source: FileSource
    let progress: ResourceProgress
    let completion: @Sendable (PeerMeshError?) -> Void
    var machine: ResourceSender
    var digest: [UInt8] = []
    var expiry: Scheduled<Void>?

    init(id: UInt64, peer: PeerID, name: String, source: FileSource, progress: ResourceProgress,
         resumeWindow: TimeAmount, completion: @escaping @Sendable (PeerMeshError?) -> Void) {
        self.id = id
        self.peer = peer
        self.name = name
        self.source = source
        self.progress = progress
        self.completion = completion
        self.machine = ResourceSender(size: source.size, resumeWindow: resumeWindow)
    }
}

/// A resource we receive.
struct IncomingResource {
    let key: TransferKey
    /// Tells this record from an earlier one under the same key (before a resume), whose I/O may still complete.
    let serial: UInt64
    /// The sanitised file name (a relative path when it came from a folder).
    let name: String
    let sink: FileSink
    let progress: ResourceProgress
    var machine: ResourceReceiver
    var url: URL?

    init(key: TransferKey, serial: UInt64, rawName: String, size: UInt64, offset: UInt64, window: UInt32, sink: FileSink) {
        self.key = key
        self.serial = serial
        self.name = ResourceName.sanitizePath(rawName)
        self.sink = sink
        self.progress = ResourceProgress(totalUnitCount: Int64(clamping: size))
        self.progress.completedUnitCount = Int64(clamping: offset)
        self.machine = ResourceReceiver(size: size, offset: offset, window: window)
    }
}

/// A partial file kept after the link dropped, waiting for the sender to re-offer it.
struct PartialResource {
    let sink: FileSink
    let expiry: Scheduled<Void>
    var fileName: String { sink.fileName }

    /// Gives up on the resume: no expiry any more, and the partial file goes.
    func drop() {
        expiry.cancel()
        sink.discardLater()
    }
}

/// A resource offered to us that waits for the app's answer (`Configuration.asksBeforeReceiving`).
struct PendingOffer {
    let rawName: String
    let size: UInt64
    /// The partial file it will be written to once accepted.
    let fileName: String
    let offer: ResourceOffer
}

/// A stream we write: its machine, and the promises the app waits on.
struct OutgoingStream {
    let peer: PeerID
    var machine = StreamSender<EventLoopPromise<Void>>()
    /// Completed when the reader accepts (nil once it did).
    var opened: EventLoopPromise<Void>?
    let ended: @Sendable (PeerMeshError) -> Void
}

/// A stream we read: its machine, and the bytes handed to the app.
struct IncomingStream {
    let bytes: ByteStream
    var machine: StreamReceiver
}

/// A transfer the peer originated: its ID is only unique per sender.
struct TransferKey: Hashable, Sendable {
    let peer: PeerID
    let id: UInt64
}
