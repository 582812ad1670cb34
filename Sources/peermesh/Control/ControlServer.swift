import PeerMeshRoom
import FoundationEssentials
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PeerMesh

/// The room's control socket: the user's other `peermesh` commands (`send`, `peers`, `browse`) ask the open room to
/// act for them, and scripts follow its events (docs/control-protocol.md).
///
/// Only the room's own user gets in: the socket lives in a 0700 directory, is itself 0600, and each connection's
/// peer uid is checked with `SO_PEERCRED` (root's too: root can read the socket but is not the user).
final class ControlServer: Sendable {
    private let channel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    private let serving: Task<Void, Never>
    let place: ControlPlace

    /// Listens at `place.socket` (the identity's lock is ours, so a socket file left there is a dead room's).
    /// `hello` is the first line each client reads; `handle` answers one request (run in a task of its own, cancelled
    /// when the client goes away).
    init(at place: ControlPlace, hello: @escaping @Sendable () -> (fields: [String: JSONField], text: String),
         handle: @escaping @Sendable (ControlRequest, ControlConnection) async -> Void) async throws {
        do {
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .bind(unixDomainSocketPath: place.socket.path, cleanupExistingSocketFile: true) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ControlLineDecoder()))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw CLIError("Cannot open the control socket \(place.socket.path): \(error).")
        }
        chmod(place.socket.path, 0o600)
        self.place = place
        let channel = channel
        serving = Task {
            try? await channel.executeThenClose { clients in
                await withDiscardingTaskGroup { group in
                    do {
                        for try await client in clients {
                            group.addTask { await Self.serve(client, hello: hello, handle: handle) }
                        }
                    } catch {}
                }
            }
        }
    }

    /// Closes the socket and every client's connection, and removes the socket file.
    func stop() async {
        serving.cancel()
        try? await channel.channel.close()
        unlink(place.socket.path)
    }

    /// `SO_PEERCRED`'s `struct ucred` (Swift's Glibc does not import it): the peer's pid, uid and gid.
    private struct PeerCredentials { var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0 }

    private static func serve(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>, hello: () -> (fields: [String: JSONField], text: String),
                              handle: @escaping @Sendable (ControlRequest, ControlConnection) async -> Void) async {
        guard let provider = client.channel as? SocketOptionProvider,
              let credentials: PeerCredentials = try? await provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET), name: SO_PEERCRED).get(),
              credentials.uid == getuid() else {
            try? await client.channel.close()
            return
        }
        try? await client.executeThenClose { inbound, outbound in
            let connection = ControlConnection()
            let (fields, text) = hello()
            connection.sendFrame("control", fields, text: text, request: nil)
            async let written: Void = {
                for await line in connection.lines {
                    do { try await outbound.write(ByteBuffer(bytes: line)) } catch { return }
                }
            }()
            await withTaskGroup(of: Void.self) { group in
                do {
                    for try await line in inbound {
                        switch ControlRequest.decode(Data(buffer: line), accepting: ControlProtocol.requests) {
                        case .success(let request):
                            group.addTask { await handle(request, connection) }
                        case .failure(let rejection):
                            connection.send(.error(.init(message: rejection.message, code: "badRequest")),
                                            text: "error: \(rejection.message)", request: rejection.id)
                        }
                    }
                } catch {}
                // The client stopped writing (a script's `printf … | socat`, or Ctrl-C): what it asked for still
                // finishes in the room (a send keeps going, and the room's terminal shows it); a follow ends.
                connection.inputEnded()
            }
            connection.finish()
            await written
        }
    }
}

/// One client of the control socket: what the room sends it goes through a bounded queue, so a client that stops
/// reading is cut off instead of growing the room's memory.
final class ControlConnection: Sendable {
    /// Lines waiting to be written.
    let lines: AsyncStream<Data>
    private let sink: AsyncStream<Data>.Continuation
    /// Lines a client may leave unread before it is cut off (a `follow` of a busy room, a script that went to sleep).
    static let backlog = 10_000

    /// What cuts the client off when its backlog is full (a writer blocked on a client that reads nothing would
    /// never see the queue end).
    private let overflowed: @Sendable () -> Void

    init(onOverflow: @escaping @Sendable () -> Void = {}) {
        (lines, sink) = AsyncStream.makeStream(of: Data.self, bufferingPolicy: .bufferingOldest(Self.backlog))
        overflowed = onOverflow
    }

    /// Sends one event line.
    /// Sends a line of the protocol itself, not a room event: `control`, `hello`, `ready`, `done`, `failed`, `upload`.
    func sendFrame(_ name: String, _ fields: [String: JSONField], text: String, request: String?) {
        queue(ControlEvent.line(name, fields, text: text, request: request))
    }

    /// Sends a room event with its sentence, the request it answers, and the face's own fields (`extra`).
    func send(_ event: RoomEvent, text: String, request: String?, extra: [String: JSONField] = [:]) {
        queue(ControlEvent.line(event, text: text, request: request, extra: extra))
    }

    private func queue(_ line: Data) {
        if case .dropped = sink.yield(line) {
            sink.finish()
            overflowed()
        }
    }

    /// A listener that sends every event it hears to this client, marked as answering `request`.
    func listener(for request: String?) -> RoomListener {
        RoomListener { [weak self] event, text in self?.send(event, text: text, request: request) }
    }

    /// Ends the connection's output.
    func finish() { sink.finish() }

    /// Runs what request `id` asks and ends it as the protocol says: `done`, or `failed` with a message, the exit code
    /// the client should end with and, for the library's errors, their code.
    func answering(_ id: String, _ body: () async throws -> Void) async {
        do {
            try await body()
            sendFrame("done", [:], text: "", request: id)
        } catch let error as CLIError {
            sendFrame("failed", ["message": .string(error.description), "exit": .number(Int64(error.exitCode))], text: "error: \(TerminalText.escaped(error.description))", request: id)
        } catch let error as PeerMeshError {
            let why = UserWords.explain(error)
            sendFrame("failed", ["message": .string(why), "code": .string(error.code.name), "exit": 1], text: "error: \(TerminalText.escaped(why))", request: id)
        } catch {
            sendFrame("failed", ["message": .string("\(error)"), "exit": 1], text: "error: \(error)", request: id)
        }
    }

    private let ended = NIOLockedValueBox<(done: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    /// Records that the client will send no more: `untilInputEnds` returns.
    func inputEnded() {
        let waiting = ended.withLockedValue { state in
            state.done = true
            defer { state.waiting = [] }
            return state.waiting
        }
        waiting.forEach { $0.resume() }
    }

    /// Returns once the client sent its last line (a follow lasts until then).
    func untilInputEnds() async {
        await withCheckedContinuation { continuation in
            let done = ended.withLockedValue { state in
                if !state.done { state.waiting.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }
}
