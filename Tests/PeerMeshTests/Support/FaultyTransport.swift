import NIOConcurrencyHelpers
import NIOCore
@testable import PeerMesh

/// TCP with a switch in front of every connection of one session, so a test can kill that session's network the way
/// a process dies: at once (every connection closes) or silently (every byte in or out vanishes and nothing closes,
/// as when a machine loses power — only the others' liveness can tell).
final class FaultyTransport: TCPWithHandlerInFront {
    private enum State { case working, quiet, released }

    private let state = NIOLockedValueBox(State.working)
    private let channels = NIOLockedValueBox<[Channel]>([])

    /// Every connection closes now; later ones still work.
    func closeAll() {
        for channel in channels.withLockedValue({ $0 }) { channel.close(promise: nil) }
    }

    /// From now on nothing gets through any connection, in either direction, and nothing closes.
    func goQuiet() { state.withLockedValue { $0 = .quiet } }

    /// Ends the test: connections may close again, and do.
    func release() {
        state.withLockedValue { $0 = .released }
        closeAll()
    }

    func prepare(_ channel: Channel) throws {
        channels.withLockedValue { $0.append(channel) }
        channel.closeFuture.whenComplete { [channels] _ in channels.withLockedValue { $0.removeAll { $0 === channel } } }
        try channel.pipeline.syncOperations.addHandler(Switch(state: state))
    }

    /// Passes everything while working; swallows reads, writes and closes while quiet.
    private final class Switch: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        private let state: NIOLockedValueBox<State>

        init(state: NIOLockedValueBox<State>) { self.state = state }

        private var isQuiet: Bool { state.withLockedValue { $0 == .quiet } }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if !isQuiet { context.fireChannelRead(data) }
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            // A dead peer's kernel still takes the bytes: the writer learns nothing.
            if isQuiet { promise?.succeed() } else { context.write(data, promise: promise) }
        }

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            if isQuiet { promise?.succeed() } else { context.close(mode: mode, promise: promise) }
        }
    }
}
