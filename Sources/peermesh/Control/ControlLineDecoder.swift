import PeerMeshRoom
import NIOCore

/// Splits the control socket's bytes into lines (without the newline); a line longer than
/// `ControlProtocol.maximumLineBytes` closes the connection rather than grow without bound.
struct ControlLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    /// A line over the limit.
    struct LineTooLong: Error {}

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > ControlProtocol.maximumLineBytes { throw LineTooLong() }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        guard length <= ControlProtocol.maximumLineBytes, let line = buffer.readSlice(length: length) else { throw LineTooLong() }
        buffer.moveReaderIndex(forwardBy: 1)
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without its newline is still a line.
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0, let line = buffer.readSlice(length: buffer.readableBytes) {
            context.fireChannelRead(wrapInboundOut(line))
        }
        return .needMoreData
    }
}
