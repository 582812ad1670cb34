import Foundation

extension BenchRun {
    /// `web`: the same file (1 GiB, 64 MiB in a quick run) sent into a room by `peermesh web` — announced over its
    /// WebSocket and PUT from disk as a page does — and by `peermesh send`, from namespace A to a `peermesh host` in
    /// namespace B over one veth link, joined by address (no discovery). Each repetition runs both, side by side;
    /// the receiver's copy is compared with the source every time. Both are the shipped CLI (`peermesh`, release
    /// build, next to `peermesh-bench`): their peak RSS is part of the target.
    func web() throws {
        let name = "\(fileLabel) from the web page (PUT + mesh), hash verified"
        let target = "≥ 0.9× peermesh send, RSS ≤ CLI's + 16 MiB"
        let cli = ((options.peermesh as NSString).deletingLastPathComponent as NSString).appendingPathComponent("peermesh")
        guard FileManager.default.isExecutableFile(atPath: cli), !buildFailed else {
            log("web: \(cli) not found (swift build -c release --product peermesh): PeerMesh row shows 'not yet'")
            row(name, cell(.notYet), cell(.notYet), "—", target, "—")
            return
        }
        try makeSourceFile()
        let size = Double(options.fileMiB * 1024 * 1024)
        let prefix = namespacePrefix
        let (a, b) = (prefix + "wa", prefix + "wb")
        try addNamespace(a)
        try addNamespace(b)
        try veth((a, prefix + "wa0", "10.215.0.1/24"), (b, prefix + "wb0", "10.215.0.2/24"))
        let base = "\(work)/web"
        let downloads = "\(base)/downloads", client = "\(base)/web-upload.py"
        try FileManager.default.createDirectory(atPath: downloads, withIntermediateDirectories: true)
        try webUploadClient.write(toFile: client, atomically: true, encoding: .utf8)
        let inA = ["ip", "netns", "exec", a], inB = ["ip", "netns", "exec", b]

        log("web: peermesh host in B, peermesh send and peermesh web in A (\(options.reps) x)")
        let hostLabel = "pm-web-host"
        let host = try runBackground(hostLabel, timeout: 3600, in: base, inB + isolatedEnvironment(base, "host") + [
            cli, "host", "lobby", "--json", "--files", "accept", "--downloads", downloads, "--identity", "\(base)/host.pem",
            "--name", "host", "--port", "7415",
        ])
        guard let address = try waitEvent("\(logs)/\(hostLabel).out", "join-address", host, seconds: 60),
              case .string(let command)? = address["command"], let room = command.split(separator: " ").last.map(String.init) else {
            fail(hostLabel, "peermesh host did not print a join-address")
            stopBackground(host)
            hosts.teardown()
            row(name, "error", "error", "—", target, "—")
            return
        }
        log("web: room \(room)")

        /// The one file the host received, compared with the source, then removed with everything else there.
        func received(_ label: String) throws -> Bool {
            // (the receiver keeps its partial files in a hidden folder there)
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []).filter { !$0.hasPrefix(".") }
            defer { for name in names { try? FileManager.default.removeItem(atPath: "\(downloads)/\(name)") } }
            guard names.count == 1 else {
                fail(label, "the host has \(names.count) files (\(names.joined(separator: ", "))), not one")
                return false
            }
            guard try runTool(["cmp", "-s", sourceFile, "\(downloads)/\(names[0])"]) == 0 else {
                fail(label, "the host's copy differs from the source")
                return false
            }
            return true
        }

        var sends: [Double] = [], pages: [Double] = [], sendRSS: [Double] = [], pageRSS: [Double] = []
        var puts: [Double] = [], joins: [Double] = []
        var ok = true
        reps: for rep in 1...options.reps {
            // Identities new in each repetition: the same identity joining again a few seconds after it left may wait
            // about 3 s for the acknowledgement of what it sends (seen with this harness), which is not the transfer.
            // What joining costs the CLI (start, join, settle, leave): a message alone, logged beside the figures.
            let joinLabel = "pm-web-join\(rep)"
            let join = try runForeground(joinLabel, timeout: 120, in: base, inA + isolatedEnvironment(base, "probe") + [
                cli, "send", "--room", room, "--message", "bench", "--identity", "\(base)/probe\(rep).pem", "--name", "probe\(rep)", "--json",
            ])
            if join.exitCode == 0 { joins.append(join.wallSeconds) }
            // peermesh send: wall clock from start to exit (joining the room included, as a user waits for it)
            let sendLabel = "pm-web-send\(rep)"
            let send = try runForeground(sendLabel, timeout: 900, in: base, inA + isolatedEnvironment(base, "send") + [
                cli, "send", "--room", room, "--file", sourceFile, "--identity", "\(base)/send\(rep).pem", "--name", "sender\(rep)", "--json",
            ])
            guard send.exitCode == 0 else {
                fail(sendLabel, "peermesh send failed (rc \(send.exitCode))")
                ok = false
                break reps
            }
            guard try received(sendLabel) else { ok = false; break reps }
            noteRSS("web", "peermesh send (A)", send)
            sends.append(size * 8 / send.wallSeconds)
            sendRSS.append(send.rssKiB)

            // peermesh web: in the room first, then the page's upload: request → PUT → sent → done
            let pageLabel = "pm-web-page\(rep)", clientLabel = "pm-web-client\(rep)"
            let page = try runBackground(pageLabel, timeout: 1800, in: base, inA + isolatedEnvironment(base, "page") + [
                cli, "web", room, "--no-open", "--json", "--identity", "\(base)/page\(rep).pem", "--name", "websender\(rep)",
            ])
            guard let launched = try waitEvent("\(logs)/\(pageLabel).out", "web", page, seconds: 30),
                  let port = launched["port"]?.number.map({ Int($0) }), case .string(let url)? = launched["url"],
                  let token = url.components(separatedBy: "#t=").last, !token.isEmpty,
                  try waitEvent("\(logs)/\(pageLabel).out", "joined-room", page, seconds: 60) != nil else {
                fail(pageLabel, "peermesh web did not start or join \(room)")
                stopBackground(page)
                ok = false
                break reps
            }
            let upload = try runForeground(clientLabel, timeout: 900, in: base, inA + [
                "/usr/bin/python3", client, "\(port)", token, sourceFile, "web-src.bin",
            ])
            let result = Measurement(file: "\(logs)/\(clientLabel).out")
            stopBackground(page)
            guard upload.exitCode == 0, let seconds = try? result.number("seconds"), seconds > 0 else {
                fail(clientLabel, "the page's upload failed (rc \(upload.exitCode))")
                tailLog(pageLabel)
                ok = false
                break reps
            }
            guard try received(clientLabel) else { ok = false; break reps }
            noteRSS("web", "peermesh web (A)", page)
            pages.append(size * 8 / seconds)
            pageRSS.append(page.rssKiB)
            if let put = try? result.number("put_seconds") { puts.append(put) }
            let mesh = (try? result.number("mesh_seconds")).map { fixed($0, 2) } ?? "?"
            let cpu = { (child: Child) in child.cpuSeconds.map { fixed($0, 2) + " s" } ?? "?" }
            log("web: rep \(rep): send \(format(sends.last!, .gigabits)) (\(fixed(send.wallSeconds, 2)) s, CPU \(cpu(send)); a message "
                + "alone \(joins.last.map { fixed($0, 2) } ?? "?") s), page \(format(pages.last!, .gigabits)) (\(fixed(seconds, 2)) s: "
                + "PUT \(puts.last.map { fixed($0, 2) } ?? "?") s, then the room's send \(mesh) s; CPU of peermesh web \(cpu(page)))")
        }
        stopBackground(host)
        noteRSS("web", "peermesh host (B, receiver)", host)
        hosts.teardown()
        guard ok, !sends.isEmpty, !pages.isEmpty else {
            row(name, "error", "error", "—", target, "—")
            return
        }
        let page = median(pages), send = median(sends)
        let pagePeak = pageRSS.max() ?? 0, sendPeak = sendRSS.max() ?? 0
        var cells = ratioCells(page, send, .atLeast, 0.9)
        if cells.met == "yes", pagePeak > sendPeak + 16 * 1024 { cells.met = "no" }
        let putNote = puts.isEmpty ? "" : " (PUT \(fixed(median(puts), 2)) s of it)"
        let joinNote = joins.isEmpty ? "" : " (a message alone: \(fixed(median(joins), 2)) s)"
        log("web: median page \(format(page, .gigabits))\(putNote), send \(format(send, .gigabits))\(joinNote); peak RSS page "
            + "\(format(pagePeak, .mebibytes)) MiB, send \(format(sendPeak, .mebibytes)) MiB")
        row(name, "\(format(page, .gigabits)), peak RSS \(format(pagePeak, .mebibytes)) MiB",
            "\(format(send, .gigabits)) (peermesh send), peak RSS \(format(sendPeak, .mebibytes)) MiB",
            cells.ratio, target, cells.met)
    }

    /// Waits until `path` (a `--json` process's stdout) has a line whose `event` is `event` (and that `matching`
    /// accepts) and returns that line's object; nil when `child` exits first or `seconds` pass.
    func waitEvent(_ path: String, _ event: String, _ child: Child, seconds: Int,
                   matching: (JSONValue) -> Bool = { _ in true }) throws -> JSONValue? {
        for _ in 0..<(seconds * 20) {
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                for line in text.split(separator: "\n") {
                    guard line.hasPrefix("{"), let object = JSONValue.parse(line), case .string(event)? = object["event"],
                          matching(object) else { continue }
                    return object
                }
            }
            if supervisor.hasExited(child) { return nil }
            try supervisor.pause(0.05)
        }
        return nil
    }
}

/// The page's side of an upload, as `room.js` does it, without a browser: a WebSocket to /ws (token in
/// Sec-WebSocket-Protocol), `upload`, then one PUT of the file streamed from disk by curl (`-T`), then the room's
/// events until `done` (or `failed`) for the request. Prints one JSON line: `seconds` from the request to `done`,
/// `put_seconds` the PUT's share, `mesh_seconds` from the PUT's end to `done` (the room sending the file).
private let webUploadClient = #"""
import base64, json, os, socket, struct, subprocess, sys, threading, time

port, token, path, name = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
origin = f"http://127.0.0.1:{port}"
sock = socket.create_connection(("127.0.0.1", port))
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n"
              f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
              f"Sec-WebSocket-Protocol: peermesh.v1, peermesh.t.{token}\r\n\r\n").encode())
buffer = b""
while b"\r\n\r\n" not in buffer:
    data = sock.recv(65536)
    if not data:
        sys.exit("the WebSocket upgrade was refused (connection closed)")
    buffer += data
head, buffer = buffer.split(b"\r\n\r\n", 1)
if b" 101 " not in head.split(b"\r\n")[0]:
    sys.exit("the WebSocket upgrade was refused: " + head.split(b"\r\n")[0].decode())

def send_frame(opcode, payload):
    mask = os.urandom(4)
    n = len(payload)
    header = bytes([0x80 | opcode])
    if n < 126:
        header += bytes([0x80 | n])
    elif n < 65536:
        header += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        header += bytes([0x80 | 127]) + struct.pack(">Q", n)
    sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

def receive():
    """The next text message as an object, None when the connection closed."""
    global buffer
    message = b""
    while True:
        if len(buffer) >= 2:
            n, offset = buffer[1] & 0x7F, 2
            if n == 126 and len(buffer) >= 4:
                n, offset = struct.unpack(">H", buffer[2:4])[0], 4
            elif n == 127 and len(buffer) >= 10:
                n, offset = struct.unpack(">Q", buffer[2:10])[0], 10
            if n < 126 or offset > 2:
                if len(buffer) >= offset + n:
                    fin, opcode = buffer[0] & 0x80, buffer[0] & 0x0F
                    payload, buffer = buffer[offset:offset + n], buffer[offset + n:]
                    if opcode == 0x8:
                        return None
                    if opcode == 0x9:
                        send_frame(0xA, payload)
                        continue
                    if opcode in (0x1, 0x0):
                        message += payload
                        if fin:
                            return json.loads(message)
                    continue
        data = sock.recv(1 << 20)
        if not data:
            return None
        buffer += data

size = os.path.getsize(path)
put = {}

def put_file(upload):
    """The PUT, streamed from disk, on a thread of its own: the WebSocket is read meanwhile, as a page reads it."""
    started = time.monotonic()
    curl = subprocess.run(["curl", "-sS", "--noproxy", "*", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT",
                           "-T", path, "-H", "Expect:", "-H", f"Authorization: Bearer {token}",
                           "-H", "Content-Type: application/octet-stream", "-H", f"Origin: {origin}",
                           f"{origin}/transfers/{upload}/0"], capture_output=True, text=True)
    put["ended"] = time.monotonic()
    put["seconds"] = put["ended"] - started
    put["ok"] = curl.returncode == 0 and curl.stdout.startswith("2")
    put["text"] = f"curl exit {curl.returncode}, HTTP {curl.stdout}: {curl.stderr.strip()}"

start = time.monotonic()
send_frame(0x1, json.dumps({"request": "upload", "id": "u1", "files": [{"name": name, "size": size}]}).encode())
putter = None
events = []
while True:
    event = receive()
    if event is None:
        sys.exit("the WebSocket closed before the upload was done; events: " + ", ".join(events))
    kind = event.get("event")
    if kind != "progress":
        events.append(str(kind))
    if kind == "upload" and event.get("request") == "u1" and putter is None:
        putter = threading.Thread(target=put_file, args=(event["upload"],))
        putter.start()
    elif kind == "failed" and event.get("request") == "u1":
        sys.exit("the upload failed: " + json.dumps(event))
    elif kind == "done" and event.get("request") == "u1":
        seconds = time.monotonic() - start
        if putter is None:
            sys.exit("done before any upload event")
        putter.join()
        if not put.get("ok"):
            sys.exit("PUT failed: " + put.get("text", "?"))
        print(json.dumps({"seconds": seconds, "put_seconds": put["seconds"], "mesh_seconds": start + seconds - put["ended"],
                          "bytes": size}), flush=True)
        print("events: " + ", ".join(events), file=sys.stderr)
        break
send_frame(0x8, b"")
sock.close()
"""#
