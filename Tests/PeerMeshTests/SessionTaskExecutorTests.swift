import Foundation
import Testing
@testable import PeerMesh

@Suite("The session's task executor")
struct SessionTaskExecutorTests {
    /// An echo server and a client whose tasks prefer their sessions' executors: their code runs on the sessions'
    /// event loops, and every request gets its reply, in order.
    @Test func tasksOnTheSessionsLoopsExchangeMessagesInOrder() async throws {
        let host = try TestPeer("host", consume: false)
        let joiner = try TestPeer("joiner", consume: false)
        let hostLoop = host.session.core.loop, joinerLoop = joiner.session.core.loop
        let echo = Task(executorPreference: host.session.taskExecutor) {
            var alwaysOnLoop = true
            for await event in host.session.events {
                alwaysOnLoop = alwaysOnLoop && hostLoop.inEventLoop
                switch event {
                case .invitation(let invitation): try? invitation.accept()
                case .received(let data, let peer): try? await host.session.send(data, to: [peer])
                default: break
                }
            }
            return alwaysOnLoop
        }
        let exchange = Task(executorPreference: joiner.session.taskExecutor) { () async throws -> (replies: [Data], alwaysOnLoop: Bool) in
            try await joiner.connect(to: host)
            var alwaysOnLoop = joinerLoop.inEventLoop
            var events = joiner.session.events.makeAsyncIterator()
            var replies: [Data] = []
            for index in 0..<200 {
                try await joiner.session.send(Data("request \(index)".utf8), to: [host.peerID])
                while let event = await events.next() {
                    if case .received(let data, _) = event {
                        replies.append(data)
                        break
                    }
                }
                alwaysOnLoop = alwaysOnLoop && joinerLoop.inEventLoop
            }
            return (replies, alwaysOnLoop)
        }
        let result = try await exchange.value
        #expect(result.replies == (0..<200).map { Data("request \($0)".utf8) })
        #expect(result.alwaysOnLoop)
        await joiner.shutdown()
        await host.shutdown()
        #expect(await echo.value, "the echo task ran on the host's loop")
    }
}
