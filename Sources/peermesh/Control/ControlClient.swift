import PeerMeshRoom
import FoundationEssentials
import NIOCore
import NIOPosix

/// How a command (`send`, `peers`, `browse`) asks the open room of its identity to act for it.
enum ControlClient {
    /// The room did not answer at the socket (it is starting, or it died and its lock went with it).
    struct NoAnswer: Error {}

    /// Connects to the room at `place`, shows its first line (`control`) to `check`, which may throw to stop before
    /// anything is asked, then sends `request` and hands every event that answers it (the line, and as read) to `heard`, until the room says
    /// `done` or `failed`; returns that last event.
    static func ask(_ request: ControlRequest, at place: ControlPlace, check: (ControlEvent) throws -> Void,
                    heard: (_ line: Data, _ event: ControlEvent) -> Void) async throws -> ControlEvent {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: place.socket.path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ControlLineDecoder()))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw NoAnswer()
        }
        return try await channel.executeThenClose { inbound, outbound in
            var lines = inbound.makeAsyncIterator()
            guard let first = try await lines.next(), let hello = ControlEvent.decode(Data(buffer: first)), hello.name == "control" else {
                throw NoAnswer()
            }
            guard hello.number("version") == Int64(ControlProtocol.version) else {
                throw CLIError("The open room (process \(hello.number("pid") ?? 0)) speaks control protocol \(hello.number("version") ?? 0), this peermesh \(ControlProtocol.version): it is another version of peermesh; use that one, or close the room and open it again.")
            }
            try check(hello)
            try await outbound.write(ByteBuffer(data: request.line))
            while let line = try await lines.next() {
                let data = Data(buffer: line)
                guard let event = ControlEvent.decode(data), event.string("request") == request.id else { continue }
                if event.name == "done" || event.name == "failed" { return event }
                heard(data, event)
            }
            throw CLIError("The open room closed before it answered (it quit, or was stopped).")
        }
    }
}
