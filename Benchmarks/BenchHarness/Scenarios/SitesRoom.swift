import Foundation

/// The room "lobby" of `sites` rows 2 and 3, one `peermesh` process per host: gate1 hosts it on g1 (and publishes it
/// into example.test with its wg0 address), desk1 joins on LAN 1, gate2 finds it in the domain and joins through the
/// tunnel, desk2 joins on LAN 2 (through gate2, the only member it can reach).
struct SitesRoom {
    var gate1: Child, desk1: Child, gate2: Child
    var desk2: Child?
}

extension BenchRun {
    /// `peermesh ARGUMENTS --json` as `who` on avahi host `host`: its own home and identity, files accepted into
    /// `work/sites/downloads-WHO`; in the background.
    func sitesMember(_ net: SitesNetwork, cli: String, on host: String, _ who: String, _ arguments: [String]) throws -> Child {
        let base = "\(work)/sites"
        return try runBackground("pm-sites-\(who)", timeout: 3600, in: base, net.enter(host) + isolatedEnvironment(base, who) + [cli] + arguments + [
            "--json", "--identity", "\(base)/home-\(who)/identity.pem", "--name", who, "--files", "accept", "--downloads", "\(base)/downloads-\(who)",
        ])
    }

    /// Opens the room step by step, each step waiting for the one before (as a person would see it); nil after saying
    /// which step failed.
    func openSitesRoom(_ net: SitesNetwork, cli: String) throws -> SitesRoom? {
        let out = { (who: String) in "\(self.logs)/pm-sites-\(who).out" }
        let gate1 = try sitesMember(net, cli: cli, on: net.g1, "gate1", [
            "host", "lobby", "--port", "47000", "--domain", "example.test", "--dns-server", SitesNetwork.dnsFromG1,
            "--update-key", net.keyFile, "--publish-address", "wg0",
        ])
        guard try waitEvent(out("gate1"), "published", gate1, seconds: 20) != nil else { return sitesStepFailed("gate1", "did not publish the room") }
        let desk1 = try sitesMember(net, cli: cli, on: net.m1, "desk1", ["join", "lobby"])
        guard try waitEvent(out("desk1"), "joined-room", desk1, seconds: 20) != nil else { return sitesStepFailed("desk1", "did not join on LAN 1") }
        let gate2 = try sitesMember(net, cli: cli, on: net.g2, "gate2", ["join", "lobby", "--domain", "example.test", "--dns-server", SitesNetwork.dnsFromG2])
        guard try waitEvent(out("gate2"), "joined-room", gate2, seconds: 20) != nil else { return sitesStepFailed("gate2", "did not join through the tunnel") }
        // gate2 advertises the room on LAN 2, as every member does on its LAN: that is how desk2 finds it.
        guard try waitEvent(out("gate2"), "advertised", gate2, seconds: 20) != nil else { return sitesStepFailed("gate2", "did not advertise on LAN 2") }
        var room = SitesRoom(gate1: gate1, desk1: desk1, gate2: gate2)
        guard let desk2 = try joinDesk2(net, cli: cli, "desk2") else { return nil }
        room.desk2 = desk2
        return room
    }

    /// Starts `who` on m2 (`peermesh join lobby`, found on LAN 2) and waits until it joined through gate2 and has
    /// verified desk1 end to end (the locked network: desk1 is reached only through relays); nil after saying what failed.
    func joinDesk2(_ net: SitesNetwork, cli: String, _ who: String) throws -> Child? {
        let path = "\(logs)/pm-sites-\(who).out"
        let child = try sitesMember(net, cli: cli, on: net.m2, who, ["join", "lobby"])
        let joined = try waitEvent(path, "joined-room", child, seconds: 20)
        let throughGate2 = joined.map { if case .string("gate2")? = $0["peer"] { true } else { false } } ?? false
        let isDesk1 = { (event: JSONValue) in if case .string("desk1")? = event["peer"] { true } else { false } }
        guard throughGate2, try waitEvent(path, "verified", child, seconds: 20, matching: isDesk1) != nil else {
            stopBackground(child)
            return sitesStepFailed(who, joined == nil ? "did not join on LAN 2" : "did not join through gate2 or never verified desk1")
        }
        return child
    }

    /// Reports a failed step of opening the room (with the member's log); always nil.
    private func sitesStepFailed<T>(_ who: String, _ what: String) -> T? {
        fail("pm-sites-\(who)", "sites: \(who) \(what)")
        return nil
    }

    /// Row 2's PeerMesh side, on the locked network: desk2 sends the file to desk1 alone (`/send @desk1 FILE`: the `send` request on
    /// desk2's control socket, as `peermesh`'s own commands use it), relayed m2 → gate2 → tunnel → gate1 → m1; each
    /// repetition is timed from the request to `done` (after desk1 verified the SHA-256), then desk1's copy is compared
    /// with the source and removed. Returns the rates (bit/s) and desk2's route to desk1; nil rates after an error.
    func sitesRelayedFile(_ net: SitesNetwork, room: SitesRoom, file: String, bytes: Double) throws -> (rates: [Double]?, route: String) {
        let runtime = runtimeDirectory("\(work)/sites", "desk2")
        let peers = try control(runtime, #"{"request":"peers","id":"route"}"#, id: "route", seconds: 10)
        let route = peers.events("peer").first { if case .string("desk1")? = $0["peer"] { true } else { false } }?["route"]
        guard case .string(let way)? = route, way != "direct" else {
            fail("pm-sites-desk2", "sites: desk2's route to desk1 is \(route.map { "\($0)" } ?? "unknown"), not through a relay")
            return (nil, "\(route.map { "\($0)" } ?? "unknown")")
        }
        var rates: [Double] = []
        let downloads = "\(work)/sites/downloads-desk1"
        for rep in 1...options.reps {
            let id = "file\(rep)"
            let request = #"{"request":"send","id":""# + id + #"","to":"desk1","paths":[""# + file + #""]}"#
            let answer = try control(runtime, request, id: id, seconds: 600)
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: downloads)) ?? []).filter { !$0.hasPrefix(".") }
            defer { for name in names { try? FileManager.default.removeItem(atPath: "\(downloads)/\(name)") } }
            guard answer.done, !answer.events("file-sent").isEmpty, names.count == 1,
                  try runTool(["cmp", "-s", file, "\(downloads)/\(names[0])"]) == 0 else {
                fail("pm-sites-desk1", "sites: the file to desk1 failed (rep \(rep): done \(answer.done), \(names.count) file(s) at desk1; "
                     + "events: \(answer.events.compactMap { if case .string(let e)? = $0["event"] { e } else { nil } }.joined(separator: ", ")))")
                return (nil, way)
            }
            rates.append(bytes * 8 / answer.seconds)
            log("sites: rep \(rep): relayed file \(format(rates.last!, .gigabits)) (\(fixed(answer.seconds, 2)) s)")
        }
        return (rates, way)
    }
}
