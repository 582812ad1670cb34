import PeerMeshRoom
import ArgumentParser
import FoundationEssentials
import PeerMesh

/// `peermesh doctor`: why peers do not see or reach each other — avahi-daemon, its configuration, the firewall,
/// multicast, a round trip through avahi, and optionally a peer's address — each problem with the command that fixes it.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check why rooms do not appear or cannot be joined, and print the command that fixes each problem.",
        discussion: """
            Checks, in order: avahi-daemon is installed, running and answering on D-Bus; avahi-daemon.conf settings that \
            keep rooms from being announced or found; firewall rules (as the kernel reports them; run as root to read \
            them) that drop mDNS (UDP 5353) or the room's TCP port; which interfaces carry multicast; that a test room \
            published through avahi comes back to our own browser; with --peer, that the peer answers over TCP and \
            TLS 1.3, and with which key. Exits 0 when nothing is wrong, 1 when something is.
            """
    )

    @Option(help: "Also check this peer: ADDRESS:PORT (as `peermesh host` prints it) or a connection code (pm1.…).")
    var peer: String?

    @Option(help: "The TCP port your room listens on (`peermesh host` prints it, …@ADDRESS:PORT), for the firewall check. Default: every port a room may get.")
    var port: Int?

    @Option(help: "Seconds the test room and the peer have to answer.")
    var timeout: Double = 5

    @Flag(help: "Print one JSON object per line: a `check` per check, a `finding` (with its stable `code`) per problem, then a `summary`.")
    var json = false

    func validate() throws {
        if let port, !(1...65535).contains(port) { throw ValidationError("--port must be 1–65535.") }
        if let peer, DoctorPeerTarget(peer) == nil {
            throw ValidationError("--peer takes ADDRESS:PORT (e.g. 192.168.1.5:40123) or a connection code (pm1.…), not \"\(peer)\".")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds.") }
    }

    func run() async throws {
        let output = TerminalPrinter.output(json: json)
        let services = DoctorProbes.serviceManager()
        var checks: [DoctorCheck] = []
        func report(_ check: DoctorCheck) {
            checks.append(check)
            DoctorReport.show(check, to: output)
        }

        let avahi = DoctorProbes.avahi()
        report(avahi.check(services: services))
        let configPath = AvahiDaemonConfig.defaultPath
        if let config = DoctorProbes.avahiConfig(at: configPath) {
            report(.judged("config", config.findings(services: services), else: "\(configPath) silences nothing"))
        } else {
            report(DoctorCheck(name: "config", outcome: .skipped("\(configPath) cannot be read")))
        }
        report(DoctorProbes.firewall().check(roomPorts: port.map { $0...$0 } ?? DoctorProbes.ephemeralPorts()))
        report(NetworkInterface.check(DoctorProbes.interfaces()))
        if avahi.answers {
            report(await DoctorProbes.selfTest(within: timeout).check(services: services))
        } else {
            report(DoctorCheck(name: "self-test", outcome: .skipped("avahi-daemon does not answer (see above)")))
        }
        if let target = peer.flatMap(DoctorPeerTarget.init) {
            report(await DoctorProbes.peer(target, within: timeout).check(address: target.described, port: target.port))
        }
        let findings = checks.flatMap(\.findings)
        DoctorReport.summary(findings, to: output)
        if !findings.isEmpty { throw ExitCode(1) }
    }
}

/// How the doctor's checks read: a line per check (with `--json`, an object), each finding with its fix under it.
enum DoctorReport {
    /// Prints `check`: `ok`/`skipped` in one line, or each finding and the command that fixes it.
    static func show(_ check: DoctorCheck, to output: RoomOutput) {
        switch check.outcome {
        case .ok(let words):
            emit(output, "check", ["check": .string(check.name), "ok": .bool(true), "detail": .string(words)],
                         human: "ok \(check.name): \(words)")
        case .skipped(let why):
            emit(output, "check", ["check": .string(check.name), "ok": .bool(true), "skipped": .string(why)],
                         human: "skipped \(check.name): \(why)")
        case .found(let findings):
            emit(output, "check", ["check": .string(check.name), "ok": .bool(false)], human: "PROBLEM \(check.name):")
            for finding in findings {
                var fields: [String: JSONField] = ["check": .string(check.name), "code": .string(finding.code.rawValue),
                                                   "severity": .string(finding.severity.rawValue), "message": .string(finding.message)]
                if let fix = finding.fix { fields["fix"] = .string(fix) }
                emit(output, "finding", fields, human: line(finding))
            }
        }
    }

    /// One JSON object, or the human line as it is: a report read top to bottom needs no time stamps.
    private static func emit(_ output: RoomOutput, _ name: String, _ fields: [String: JSONField], human: TerminalLine) {
        writeLine(output.json ? RoomOutput.jsonLine(name, fields, at: .now) : human.text)
    }

    /// `  [firewall-drops-mdns] The firewall rule … — fix: sudo nft delete rule inet t in handle 3`
    static func line(_ finding: DoctorFinding) -> TerminalLine {
        let label = finding.severity == .warning ? "warning " : ""
        return "  \(label)[\(finding.code.rawValue)] \(finding.message)\(finding.fix.map { " — fix: \($0)" } ?? "")"
    }

    /// The last line: how many problems, or that nothing stands in the way.
    static func summary(_ findings: [DoctorFinding], to output: RoomOutput) {
        let codes = findings.map(\.code.rawValue)
        emit(output, "summary", ["findings": .int(findings.count), "codes": .string(codes.joined(separator: " "))],
                     human: findings.isEmpty ? "nothing found that keeps peers from seeing or reaching this machine"
                         : "\(findings.count) finding(s): \(codes.joined(separator: ", "))")
    }
}
