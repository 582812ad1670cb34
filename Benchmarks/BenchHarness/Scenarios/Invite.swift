import Foundation

extension BenchRun {
    /// `invite`: invitation to both sides connected, against TCP connect + a mutual TLS 1.3 handshake (python3
    /// `ssl` client → `openssl s_server`, P-256 certificates) plus one echoed line.
    func invite() throws {
        let name = "invitation: invite → both .connected", target = "≤ 3×"
        log("invite: TCP connect + mutual TLS 1.3 handshake (\(options.inviteCount) x \(options.reps))")
        let directory = "\(work)/tls"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var baseline: Double?
        if try makeCertificates(directory) {
            let client = "\(work)/tls_client.py"
            try tlsClientScript.write(toFile: client, atomically: true, encoding: .utf8)
            let port = try freePort()
            let server = try runBackground("base-tls-server", timeout: 600, in: work, [
                "openssl", "s_server", "-accept", "127.0.0.1:\(port)", "-tls1_3", "-cert", "\(directory)/srv.pem",
                "-key", "\(directory)/srv.key", "-Verify", "1", "-CAfile", "\(directory)/cli.pem", "-verify_return_error",
                "-rev", "-quiet",
            ])
            if try waitListen(port: port, seconds: 10) {
                baseline = try everyRepetition { rep in
                    let label = "base-tls-client\(rep)"
                    let run = try runForeground(label, timeout: 120, in: work, [
                        "python3", client, "\(port)", "\(directory)/srv.pem", "\(directory)/cli.pem",
                        "\(directory)/cli.key", "\(options.inviteCount)", "5",
                    ])
                    guard run.exitCode == 0 else {
                        fail(label, "TLS handshake client failed")
                        return nil
                    }
                    let p50 = try Measurement(file: "\(logs)/\(label).out").number("p50_ms")
                    noteRSS("invite", "python3 ssl client", run)
                    return p50
                }.map(median)
            } else {
                fail("base-tls-server", "openssl s_server did not start")
            }
            stopBackground(server)
            noteRSS("invite", "openssl s_server", server)
        } else {
            fail("openssl-req", "could not create the test certificates")
        }

        log("invite: peermesh")
        var pm = try loopback("invite", ["invite", "--count", "\(options.inviteCount)"])
        checkKeys(&pm.status, pm.outputs, ["p50_ms"])
        try medianRow(name, target: target, pm, key: "p50_ms", unit: .milliseconds, peermeshSuffix: " p50",
                      baseline: baseline, baselineSuffix: " p50 (TCP + mutual TLS 1.3)", .atMost, 3)
    }

    /// Self-signed P-256 certificates for the server (for 127.0.0.1) and the client; false when openssl failed
    /// (its output is in `LOG/openssl-req.log`).
    private func makeCertificates(_ directory: String) throws -> Bool {
        let log = "\(logs)/openssl-req.log"
        let request = ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"]
        let server = try runTool(request + ["-subj", "/CN=pm-bench-server", "-addext", "subjectAltName=IP:127.0.0.1",
                                            "-keyout", "\(directory)/srv.key", "-out", "\(directory)/srv.pem"],
                                 stdout: .file(log), stderr: .descriptor(1))
        let client = try runTool(request + ["-subj", "/CN=pm-bench-client", "-keyout", "\(directory)/cli.key",
                                            "-out", "\(directory)/cli.pem"],
                                 stdout: .appending(log), stderr: .descriptor(1))
        return server == 0 && client == 0
    }
}

/// The invitation baseline's client, which must be python3's `ssl` (it is the thing measured): TCP connect +
/// mutual TLS 1.3 handshake + one echoed line (so the server has verified our certificate), per connection,
/// after WARMUP unmeasured ones. Arguments: PORT CA CERT KEY COUNT WARMUP. Prints JSON p50_ms/mean_ms/count.
private let tlsClientScript = """
    import json, socket, ssl, statistics, sys, time

    port, ca, cert, key, count, warm = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.load_verify_locations(ca)
    ctx.load_cert_chain(cert, key)
    times = []
    for i in range(warm + count):
        t0 = time.perf_counter()
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ss = ctx.wrap_socket(s, server_hostname="127.0.0.1")
        ss.sendall(b"ping\\n")
        buf = b""
        while b"\\n" not in buf:
            d = ss.recv(64)
            if not d: raise SystemExit("tls: server closed the connection")
            buf += d
        t1 = time.perf_counter()
        if buf.strip() != b"gnip": raise SystemExit(f"tls: unexpected echo {buf!r}")
        if ss.version() != "TLSv1.3": raise SystemExit(f"tls: negotiated {ss.version()}")
        ss.close()
        if i >= warm: times.append((t1 - t0) * 1000)
    print(json.dumps({"p50_ms": statistics.median(times), "mean_ms": statistics.mean(times), "count": len(times)}))

    """
