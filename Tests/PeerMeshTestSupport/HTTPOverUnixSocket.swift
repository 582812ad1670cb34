import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 request and its response over a Unix-domain socket, enough to talk to chromedriver through the relay
/// `WebDriver` starts (a socket path works from any network namespace; a TCP port on a host's 127.0.0.1 does not).
///
/// One connection per request with `Connection: close`, so there is no pooling or pipelining to get wrong.
enum HTTPOverUnixSocket {
    struct Response {
        var status: Int
        var body: Data
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends the request and reads the whole response, failing when `timeout` seconds pass first.
    ///
    /// The blocking socket calls run on a thread of their own: the concurrency pool has two threads on this machine,
    /// and a navigation can hold a request open for seconds.
    static func request(_ method: String, _ path: String, body: Data? = nil, socket: String, timeout: Double) async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result(catching: { try exchange(method, path, body: body, socket: socket, timeout: timeout) }))
            }.start()
        }
    }

    private static func exchange(_ method: String, _ path: String, body: Data?, socket socketPath: String, timeout: Double) throws -> Response {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        try connect(fd, to: socketPath)

        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        if let body { head += "Content-Type: application/json; charset=utf-8\r\nContent-Length: \(body.count)\r\n" }
        try send(fd, Data((head + "\r\n").utf8) + (body ?? Data()), before: deadline)

        var received = Data()
        let separator = Data("\r\n\r\n".utf8)
        var headerEnd: Range<Data.Index>?
        while headerEnd == nil {
            guard try receive(fd, into: &received, before: deadline) else {
                throw Failure(description: "the connection closed before a whole response header (\(received.count) bytes)")
            }
            headerEnd = received.range(of: separator)
        }
        let header = String(decoding: received[..<headerEnd!.lowerBound], as: UTF8.self)
        var content = Data(received[headerEnd!.upperBound...])
        let lines = header.components(separatedBy: "\r\n")
        let statusWords = lines[0].split(separator: " ")
        guard statusWords.count >= 2, let status = Int(statusWords[1]) else { throw Failure(description: "bad status line: \(lines[0])") }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if let length = fields["content-length"].flatMap(Int.init) {
            while content.count < length {
                guard try receive(fd, into: &content, before: deadline) else {
                    throw Failure(description: "the connection closed after \(content.count) of \(length) body bytes")
                }
            }
            return Response(status: status, body: content.prefix(length))
        }
        // No length: the body runs to the end of the connection (we asked for it to close).
        while try receive(fd, into: &content, before: deadline) {}
        if fields["transfer-encoding"]?.lowercased() == "chunked" { content = try dechunk(content) }
        return Response(status: status, body: content)
    }

    private static func connect(_ fd: Int32, to path: String) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { throw Failure(description: "socket path longer than \(capacity - 1) bytes: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw Failure(description: "connect \(path): errno \(errno)") }
    }

    /// Waits until `fd` is ready for `events` or the deadline passes (then throws).
    private static func waitFor(_ fd: Int32, _ events: Int16, before deadline: ContinuousClock.Instant) throws {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw Failure(description: "no answer within the time allowed") }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let milliseconds = min((left / .milliseconds(1)).rounded(.up), 60_000)
            let ready = poll(&entry, 1, Int32(milliseconds))
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw Failure(description: "poll: errno \(errno)") }
        }
    }

    private static func send(_ fd: Int32, _ data: Data, before deadline: ContinuousClock.Instant) throws {
        var rest = data[...]
        while !rest.isEmpty {
            try waitFor(fd, Int16(POLLOUT), before: deadline)
            // MSG_NOSIGNAL: a relay that died must fail this call, not raise SIGPIPE in the test runner.
            let written = rest.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw Failure(description: "send: errno \(errno)")
            }
            rest = rest.dropFirst(written)
        }
    }

    /// Appends what arrives to `data`; false at the end of the connection.
    private static func receive(_ fd: Int32, into data: inout Data, before deadline: ContinuousClock.Instant) throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            try waitFor(fd, Int16(POLLIN), before: deadline)
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw Failure(description: "recv: errno \(errno)")
            }
            data.append(contentsOf: buffer[..<count])
            return count > 0
        }
    }

    private static func dechunk(_ data: Data) throws -> Data {
        var body = Data(), rest = data[...]
        let newline = Data("\r\n".utf8)
        while let end = rest.range(of: newline) {
            let sizeText = String(decoding: rest[..<end.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw Failure(description: "bad chunk size \(sizeText)") }
            if size == 0 { return body }
            let start = end.upperBound
            guard rest.distance(from: start, to: rest.endIndex) >= size + 2 else { throw Failure(description: "truncated chunk") }
            body += rest[start..<rest.index(start, offsetBy: size)]
            rest = rest[rest.index(start, offsetBy: size + 2)...]
        }
        throw Failure(description: "chunked body without its last chunk")
    }
}
