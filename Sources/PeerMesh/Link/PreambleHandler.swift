import NIOCore
import PeerMeshCore

/// Fired inbound when the peer's preamble has been read (or failed to parse).
struct PreambleReceived {
    let result: Result<Preamble, PeerMeshError>
}

/// Fired inbound with the first byte the peer sent after its preamble, before that byte goes on (to TLS or to
/// the frame decoder): it tells whether the peer started TLS, which must match what the preambles agreed.
struct FirstByteAfterPreamble {
    let byte: UInt8
}

/// First in the pipeline: collects the peer's plaintext preamble, announces it, then announces the first byte
/// that followed it, forwards everything from there on (already the start of TLS or of frames) and removes itself.
///
/// The announcement is handled synchronously downstream, so by the time leftover bytes are forwarded the link
/// has inserted the TLS handler right after this one and those bytes reach TLS, not the frame decoder.
final class PreambleHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var buffer: ByteBuffer?
    private var done = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else {
            forward(unwrapInboundIn(data), context: context)
            return
        }
        var incoming = unwrapInboundIn(data)
        if buffer == nil { buffer = incoming } else { buffer!.writeBuffer(&incoming) }
        let result: Result<Preamble, PeerMeshError>
        do {
            guard let preamble = try Preamble.read(from: &buffer!) else { return }
            result = .success(preamble)
        } catch {
            result = .failure(error)
        }
        done = true
        context.fireUserInboundEventTriggered(PreambleReceived(result: result))
        guard case .success = result, context.channel.isActive else { return }
        if let rest = buffer, rest.readableBytes > 0 { forward(rest, context: context) }
        buffer = nil
    }

    private func forward(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        guard let first = bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) else { return }
        context.fireUserInboundEventTriggered(FirstByteAfterPreamble(byte: first))
        guard context.channel.isActive else { return }
        context.fireChannelRead(wrapInboundOut(bytes))
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
