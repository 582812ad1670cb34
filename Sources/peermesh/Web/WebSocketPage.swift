import PeerMeshRoom
import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// One page's WebSocket, once upgraded: text frames in are requests for `WebRoom`, the room's events go out as text
/// frames through a bounded queue (`ControlConnection`: a page that stops reading is cut off, not buffered without end).
final class WebSocketPage: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let web: WebRoom
    private let page: ControlConnection
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)

    init(web: WebRoom) {
        self.web = web
        let channel = self.channel
        page = ControlConnection(onOverflow: { channel.withLockedValue { $0 }?.close(promise: nil) })
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel, page = self.page, web = self.web
        self.channel.withLockedValue { $0 = channel }
        // Written in order, each after the last one left: the socket's own pace is the queue's.
        Task {
            for await line in page.lines {
                var text = ByteBuffer(bytes: line)
                if text.getInteger(at: text.writerIndex - 1, as: UInt8.self) == UInt8(ascii: "\n") { text.moveWriterIndex(to: text.writerIndex - 1) }
                do { try await channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: text)) } catch { break }
            }
            // The queue ended: the page left, the room closed, or the page stopped reading and was cut off.
            try? await channel.close()
        }
        Task { await web.attach(page) }
    }

    /// A frame too large or too fragmented, or a broken connection: the page reconnects.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        page.inputEnded()
        web.detach(page)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            let message = Data(buffer: frame.unmaskedData)
            let web = self.web, page = self.page
            Task { await web.handle(message, from: page) }
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            close(context, code: .normalClosure)
        case .pong:
            break
        default:
            // Binary frames are not part of the protocol.
            close(context, code: .unacceptableData)
        }
    }

    private func close(_ context: ChannelHandlerContext, code: WebSocketErrorCode) {
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
