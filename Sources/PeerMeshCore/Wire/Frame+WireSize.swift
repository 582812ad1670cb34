import NIOCore

extension Frame {
    /// About how many bytes this frame takes on the wire (exact for the frames that carry payloads).
    public var wireSize: Int {
        switch self {
        case .data(let data): 5 + FrameLimits.dataHeaderSize + data.payload.readableBytes
        case .routed(let routed): 5 + RoutedFrame.headerSize + routed.payloadSize
        case .multicast(let multicast): 5 + multicast.bodySize
        case .datagram(let datagram): 5 + datagram.size
        case .messages(let batch): 5 + batch.bodySize
        case .transfer(let transfer):
            if case .chunk(_, let payload) = transfer.body { 5 + FrameLimits.transferChunkHeaderSize + payload.readableBytes } else { 128 }
        default: 128
        }
    }
}
