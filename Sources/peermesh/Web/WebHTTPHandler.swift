import PeerMeshRoom
import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix
import PeerMesh

/// The page's HTTP requests, after `WebGate` has judged each head: assets, uploads handed to the room's send and
/// written to disk as they arrive, and received files served from disk. Anything the gate refuses gets the same
/// bodyless 403 and the connection closes.
///
/// A connection that has not sent a request within `WebServer.idleLimit` (or is idle that long between requests) is
/// closed: only an authenticated WebSocket stays open.
final class WebHTTPHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let gate: WebGate
    private let web: WebRoom
    private let clientUID: UInt32?
    private var idle: Scheduled<Void>?
    private var state = State.waiting
    /// Set while an upload waits for the room's send to catch up: the socket is not read meanwhile, so the browser is
    /// slowed by TCP and nothing piles up here.
    private var paused = false
    /// A read the channel asked for while paused, made once the upload may go on.
    private var heldRead = false

    private enum State {
        case waiting
        /// Answered already (an asset, a download, a refusal): a body that follows is dropped.
        case ignoring
        /// Writing an upload's file as it arrives: its writer, where it is, how many bytes it has (it must have
        /// `growing.expectedSize`).
        case uploading(writer: UploadWriter, id: String, file: URL, written: Int64, growing: GrowingFile)
        /// An upload that failed part-way: the rest of its body is dropped and its end answers with why.
        case failedUpload(HTTPResponseStatus, String)
    }

    init(gate: WebGate, web: WebRoom, clientUID: UInt32?) {
        self.gate = gate
        self.web = web
        self.clientUID = clientUID
    }

    func handlerAdded(context: ChannelHandlerContext) { armIdleClose(context) }

    func handlerRemoved(context: ChannelHandlerContext) {
        idle?.cancel()
        // A connection that closed in the middle of a file (the page cancelled it, or went away).
        if case .uploading(_, let id, let file, _, _) = state {
            web.uploadFailed(id, "The page stopped handing over \"\(file.lastPathComponent)\" before its end (it was cancelled or went away); send it again from the page.")
        }
        state = .waiting
        paused = false
    }

    func channelInactive(context: ChannelHandlerContext) {
        handlerRemoved(context: context)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            idle?.cancel()
            begin(head, context: context)
        case .body(let chunk):
            write(chunk, context: context)
        case .end:
            end(context: context)
        }
    }

    private func begin(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        switch gate.decide(head, clientUID: clientUID) {
        case .asset(let path):
            guard let asset = WebAssets.asset(at: path) else { return ignore(.notFound, context) }
            var headers = WebServer.headers(port: gate.port)
            headers.replaceOrAdd(name: "content-type", value: asset.contentType)
            respond(.ok, headers, body: ByteBuffer(string: asset.body), context: context)
        case .download(let number):
            serve(number, context: context)
        case .upload(let id, let index):
            startUpload(id, index: index, context: context)
        case .notFound:
            ignore(.notFound, context)
        case .webSocket, .refused:
            // `.webSocket` here: the upgrade was not made (too many pages open).
            state = .ignoring
            respond(.forbidden, WebServer.headers(port: gate.port), body: nil, close: true, context: context)
        }
    }

    private func ignore(_ status: HTTPResponseStatus, _ context: ChannelHandlerContext) {
        state = .ignoring
        respond(status, WebServer.headers(port: gate.port), body: nil, context: context)
    }

    // MARK: Uploads

    private func startUpload(_ id: String, index: Int, context: ChannelHandlerContext) {
        switch web.uploads.target(id, index: index) {
        case .failure(let refusal):
            state = .failedUpload(HTTPResponseStatus(statusCode: refusal.status), refusal.message)
        case .success(let (file, growing)):
            guard let writer = UploadWriter(path: file.path, for: growing) else {
                state = .failedUpload(.insufficientStorage, "Cannot write \(file.lastPathComponent): \(String(cString: strerror(errno))).")
                return
            }
            state = .uploading(writer: writer, id: id, file: file, written: 0, growing: growing)
        }
    }

    /// Hands a body part to the room's send and writes it, at once, on this server's own thread. The send reads close
    /// behind; when it falls `GrowingFile.lead` bytes behind, the socket is not read until it catches up.
    private func write(_ chunk: ByteBuffer, context: ChannelHandlerContext) {
        guard case .uploading(let writer, let id, let file, let written, let growing) = state else { return }
        let expected = Int64(growing.expectedSize)
        // The room's send ended meanwhile (the members have it, or declined it): the rest is not wanted.
        if let ended = growing.failure {
            state = .failedUpload(.conflict, ended.message)
            return
        }
        let count = Int64(chunk.readableBytes)
        guard written + count <= expected else {
            fail(id, file, .payloadTooLarge, "More bytes than the file's announced size.")
            return
        }
        switch chunk.withUnsafeReadableBytes({ writer.write($0) }) {
        case .failed(let failure):
            let full = failure == ENOSPC || failure == EDQUOT
            fail(id, file, .insufficientStorage, full ? "The disk is full: free some space, then send again."
                                                      : "Cannot write \(file.lastPathComponent): \(String(cString: strerror(failure))).")
            return
        case .wait:
            pause(until: growing, context: context)
        case .goOn:
            break
        }
        state = .uploading(writer: writer, id: id, file: file, written: written + count, growing: growing)
    }

    /// Stops reading the socket until `growing`'s readers catch up.
    private func pause(until growing: GrowingFile, context: ChannelHandlerContext) {
        guard !paused else { return }
        paused = true
        waitForRoom(in: growing, context: context)
    }

    /// Asked again every `GrowingFile.idleReader`: a reader that goes quiet says nothing.
    private func waitForRoom(in growing: GrowingFile, context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop), bound = NIOLoopBound(context, eventLoop: loop)
        growing.whenRoom { loop.execute { handler.value.resumeReading(bound.value) } }
        loop.assumeIsolated().scheduleTask(in: GrowingFile.idleReader) { [self] in
            if paused { waitForRoom(in: growing, context: context) }
        }
    }

    private func resumeReading(_ context: ChannelHandlerContext) {
        guard paused else { return }
        paused = false
        if heldRead {
            heldRead = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if paused {
            heldRead = true
        } else {
            context.read()
        }
    }

    private func fail(_ id: String, _ file: URL, _ status: HTTPResponseStatus, _ message: String) {
        web.uploadFailed(id, "\"\(file.lastPathComponent)\" could not be handed over from the page: \(message)")
        state = .failedUpload(status, message)
    }

    private func end(context: ChannelHandlerContext) {
        switch state {
        case .uploading(_, let id, let file, let written, let growing):
            let expected = Int64(growing.expectedSize)
            state = .waiting
            // Its bytes are all here: the next request is not held back by how far its readers are.
            resumeReading(context)
            guard written == expected else {
                web.uploadFailed(id, "The page handed over \(written) of the \(expected) bytes of \"\(file.lastPathComponent)\"; send it again from the page.")
                return answer(.badRequest, "The file ended after \(written) of its \(expected) bytes; send it again.", context: context)
            }
            respond(.noContent, WebServer.headers(port: gate.port), body: nil, context: context)
        case .failedUpload(let status, let message):
            state = .waiting
            answer(status, message, context: context)
        case .ignoring, .waiting:
            state = .waiting
        }
    }

    /// An upload's outcome for the page: its status and a line that says what to do.
    private func answer(_ status: HTTPResponseStatus, _ message: String, context: ChannelHandlerContext) {
        var headers = WebServer.headers(port: gate.port)
        headers.replaceOrAdd(name: "content-type", value: "text/plain; charset=utf-8")
        respond(status, headers, body: ByteBuffer(string: message), context: context)
    }

    // MARK: Downloads

    private func serve(_ number: Int, context: ChannelHandlerContext) {
        state = .ignoring
        guard let path = web.downloadPath(number), let size = fileSize(atPath: path).map(Int.init),
              let handle = try? NIOFileHandle(_deprecatedPath: path) else {
            return respond(.notFound, WebServer.headers(port: gate.port), body: nil, context: context)
        }
        var headers = WebServer.headers(port: gate.port)
        headers.replaceOrAdd(name: "content-type", value: "application/octet-stream")
        headers.replaceOrAdd(name: "content-disposition", value: WebServer.attachment(URL(fileURLWithPath: path).lastPathComponent))
        headers.replaceOrAdd(name: "content-length", value: String(size))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.fileRegion(FileRegion(fileHandle: handle, readerIndex: 0, endIndex: size)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { [self] _ in
            try? handle.close()
            armIdleClose(context)
        }
    }

    // MARK: Answers

    private func respond(_ status: HTTPResponseStatus, _ headers: HTTPHeaders, body: ByteBuffer?, close: Bool = false, context: ChannelHandlerContext) {
        var headers = headers
        headers.replaceOrAdd(name: "content-length", value: String(body?.readableBytes ?? 0))
        if close { headers.replaceOrAdd(name: "connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close {
            done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        } else {
            armIdleClose(context)
        }
    }

    private func armIdleClose(_ context: ChannelHandlerContext) {
        idle?.cancel()
        idle = context.eventLoop.assumeIsolated().scheduleTask(in: WebServer.idleLimit) { context.close(promise: nil) }
    }
}
