import NIOCore
import PeerMeshCore

/// Fired inbound when the peer's 40-byte preamble has been read (or failed to parse).
struct PreambleReceived {
    let result: Result<Preamble, PeerMeshError>
}

/// First in the pipeline: collects the peer's plaintext preamble, announces it, then forwards whatever followed
/// it (already the start of TLS or of frames) and removes itself.
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
            context.fireChannelRead(data)
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
        if let rest = buffer, rest.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(rest))
        }
        buffer = nil
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
