import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The answer to one request on a room's control socket (docs/control-protocol.md): the events that carry the
/// request's id, whether it ended with `done`, and the seconds from writing the request to its last event.
struct ControlAnswer {
    var events: [JSONValue] = []
    var done = false
    var seconds = 0.0

    /// The events called `name`.
    func events(_ name: String) -> [JSONValue] {
        events.filter { if case .string(name)? = $0["event"] { true } else { false } }
    }
}

extension BenchRun {
    /// Sends `request` (one JSON object with `"id":"ID"`) to the room whose control socket is the one `.sock` in
    /// `runtime/peermesh` (a member started with XDG_RUNTIME_DIR=`runtime`), and reads its answer until `done` or
    /// `failed`, at most `seconds`. The harness talks to the socket itself, as `socat` does in the protocol's example.
    func control(_ runtime: String, _ request: String, id: String, seconds: Double) throws -> ControlAnswer {
        let directory = runtime + "/peermesh"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".sock") }
        guard names.count == 1 else { throw SpawnError(description: "\(directory): \(names.count) control sockets, not one") }
        let fd = try connectUnix(directory + "/" + names[0])
        defer { close(fd) }
        var answer = ControlAnswer()
        let start = monotonicSeconds()
        let line = Array((request + "\n").utf8)
        guard write(fd, line, line.count) == line.count else { throw SpawnError(description: "control socket: write: \(errnoText())") }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while monotonicSeconds() - start < seconds {
            try supervisor.checkInterrupted()
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            pending += buffer[0..<count]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                guard let event = JSONValue.parse(text[...]), case .string(id)? = event["request"] else { continue }
                answer.events.append(event)
                answer.seconds = monotonicSeconds() - start
                if case .string(let name)? = event["event"], name == "done" || name == "failed" {
                    answer.done = name == "done"
                    return answer
                }
            }
        }
        return answer
    }

    /// A connected Unix stream socket to `path`.
    private func connectUnix(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SpawnError(description: "socket: \(errnoText())") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw SpawnError(description: "socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw SpawnError(description: "connect \(path): \(errnoText())")
        }
        return fd
    }
}
