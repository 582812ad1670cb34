/// Bounds the decoder enforces; every one is configurable and checked before any allocation it guards.
public struct FrameLimits: Hashable, Sendable {
    /// Largest value accepted in a frame's length field (type byte + body), in bytes.
    public var maximumFrameSize: Int
    /// Largest invitation context, in bytes.
    public var maximumContextSize: Int

    /// The longest Close message accepted, in UTF-8 bytes.
    public static let maximumCloseMessageBytes = 1024
    /// The largest certificate accepted in a Hello, in bytes (ours are about 400).
    public static let maximumCertificateSize = 8192
    /// Fixed bytes of a Data frame body before its payload: two key IDs, mode, flags, sequence.
    public static let dataHeaderSize = 32 + 32 + 1 + 1 + 8

    /// Fixed bytes of a transfer chunk body before its payload: two key IDs, transfer ID, offset.
    public static let transferChunkHeaderSize = 32 + 32 + 8 + 8
    /// The longest resource or stream name accepted, in UTF-8 bytes (before the receiver sanitises it).
    public static let maximumTransferNameBytes = 1024

    /// Whether `name` can name a resource or stream on the wire: 1 to `maximumTransferNameBytes` UTF-8 bytes.
    public static func isValidTransferName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumTransferNameBytes
    }

    /// 256 KiB frames, 64 KiB invitation contexts.
    public static let `default` = FrameLimits(maximumFrameSize: 256 * 1024, maximumContextSize: 64 * 1024)

    /// Creates limits; the frame size must leave room for the largest invitation and at least one payload byte.
    public init(maximumFrameSize: Int, maximumContextSize: Int) {
        self.maximumFrameSize = maximumFrameSize
        self.maximumContextSize = maximumContextSize
    }

    /// The largest Data payload one frame can carry under these limits.
    public var maximumDataPayload: Int { maximumFrameSize - 1 - Self.dataHeaderSize }
    /// The largest transfer chunk payload one frame can carry under these limits.
    public var maximumChunkPayload: Int { maximumFrameSize - 1 - Self.transferChunkHeaderSize }
}
