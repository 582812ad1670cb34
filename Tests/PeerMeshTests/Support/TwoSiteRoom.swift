import Foundation
import PeerMeshTestSupport
import Testing

extension TwoSiteRoomTests {
    /// The room "lobby" on a `TwoSiteNetwork`, one `peermesh` process per host, each reading commands from the test:
    /// gate1 (g1) hosts it and publishes it into `example.test.`, gate2 (g2) finds it there and joins through the
    /// tunnel, desk1 (m1) and desk2 (m2) join on their LANs. Display names differ in more than a digit's place, so
    /// a line about one never matches another.
    final class Members: Sendable {
        static let room = "lobby"

        let place: Place
        let gate1: Spawned
        let gate2: Spawned
        let desk1: Spawned
        let desk2: Spawned

        private init(place: Place, gate1: Spawned, gate2: Spawned, desk1: Spawned, desk2: Spawned) {
            self.place = place
            self.gate1 = gate1
            self.gate2 = gate2
            self.desk1 = desk1
            self.desk2 = desk2
        }

        /// Brings all four into the room, checking each step as a person would see it; returns once desk1 and desk2
        /// know each other end to end. Each step needs the one before, so the first that fails ends the test (a process
        /// started before is killed when dropped, `Spawned`).
        static func enter(_ network: TwoSiteNetwork) async throws -> Members {
            let place = try Place(network: network, fixture: RoomCommandTests.Fixture())
            do {
                let (one, two) = (network.site1, network.site2)
                let gate1 = try place.start(["host", room] + place.domain(one) + ["--update-key", network.knot.keyFile.path,
                                                                                  "--publish-address", one.tunnelAddress],
                                            as: "gate1", on: one.gateway)
                try #require(await Place.line(of: gate1, within: 15, containing: "room \"\(room)\" is visible") != nil, "\(gate1.output)")
                try await network.expectPublished(place.fixture.type, at: one.tunnelAddress)
                try await place.expectFoundByDNSOnly(from: two)

                let desk1 = try place.start(["join", room], as: "desk1", on: one.member)
                try #require(await Place.line(of: desk1, within: 15, containing: "joined \"\(room)\" through gate1") != nil, "\(desk1.output)")
                let gate2 = try place.start(["join", room] + place.domain(two), as: "gate2", on: two.gateway)
                try #require(await Place.line(of: gate2, within: 20, containing: "joined \"\(room)\" through gate1") != nil, "\(gate2.output)")
                // gate2 advertises the room on LAN 2, as every member does on its LAN: that is how desk2 finds it.
                try #require(await Place.line(of: gate2, within: 15, containing: "is visible") != nil, "\(gate2.output)")
                let desk2 = try place.start(["join", room], as: "desk2", on: two.member)
                try #require(await Place.line(of: desk2, within: 15, containing: "joined \"\(room)\" through gate2") != nil, "\(desk2.output)")
                // Each is the other's only way across: they pair end to end through both gateways.
                try #require(await Place.line(of: desk1, within: 20, containing: "desk2", "(end to end)") != nil, "\(desk1.output)")
                try #require(await Place.line(of: desk2, within: 20, containing: "desk1", "(end to end)") != nil, "\(desk2.output)")
                return Members(place: place, gate1: gate1, gate2: gate2, desk1: desk1, desk2: desk2)
            } catch {
                place.fixture.remove()
                throw error
            }
        }

        /// Stops every member still running (SIGTERM: each leaves cleanly and withdraws what it published).
        func stop() {
            for member in [gate1, gate2, desk1, desk2] { member.stop() }
        }

        /// Stops the members and removes the scratch directory.
        func remove() {
            stop()
            place.fixture.remove()
        }
    }

    /// The network and the scratch directory, identities and private service type of one room test.
    struct Place: Sendable {
        let network: TwoSiteNetwork
        let fixture: RoomCommandTests.Fixture

        /// `process.line(within:containing:)`, but given up once the process has exited (say, refusing an option):
        /// its output is complete then, and waiting on would only delay the failure.
        static func line(of process: Spawned, within seconds: Double, containing fragments: String...) async -> String? {
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            while ContinuousClock.now < deadline {
                let exited = process.exitStatus != nil
                if let found = await process.line(within: 0, containing: fragments) { return found }
                if exited { return nil }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return await process.line(within: 0, containing: fragments)
        }

        /// Where `name` saves the files it receives.
        func downloads(_ name: String) -> URL { fixture.directory.appendingPathComponent("\(name)-downloads") }

        /// A file of `bytes` random bytes in the scratch directory.
        func file(_ name: String, bytes: Int) throws -> URL {
            let url = fixture.directory.appendingPathComponent(name)
            try Data((0..<bytes).map { _ in UInt8.random(in: 0...255) }).write(to: url)
            return url
        }

        /// `peermesh ARGUMENTS` as `name` on `host`, reading commands from the test, taking every file into its own folder.
        func start(_ arguments: [String], as name: String, on host: String) throws -> Spawned {
            try Spawned(network.hosts.exec(host, fixture.peermesh(arguments + ["--files", "accept", "--downloads", downloads(name).path], name)),
                        input: true)
        }

        /// Where a site's gateway looks for rooms beyond its LAN: the test zone, on the DNS server it reaches.
        func domain(_ site: TwoSiteNetwork.Site) -> [String] { ["--domain", "example.test", "--dns-server", site.dnsServer] }

        /// From the other site's gateway, `browse` finds the room in the domain, naming it, and not without the domain
        /// (no mDNS crosses between the sites).
        func expectFoundByDNSOnly(from site: TwoSiteNetwork.Site) async throws {
            func browse(_ extra: [String]) async throws -> (status: Int32, output: String) {
                try await run(network.hosts.exec(site.gateway, fixture.peermesh(["browse", "--json", "--timeout", "3"] + extra, "gate2")), within: 30)
            }
            let inDomain = try await browse(domain(site))
            let rooms = RoomCommandTests.jsonObjects(inDomain.output).filter { $0["event"] as? String == "room" && $0["room"] as? String == Members.room }
            #expect(inDomain.status == 0 && rooms.count == 1, "\(inDomain.output)")
            #expect((rooms.first?["domains"] as? String)?.contains("example.test") == true, "\(inDomain.output)")
            let lanOnly = try await browse([])
            #expect(lanOnly.status == 0 && !lanOnly.output.contains("\"room\":\"\(Members.room)\""), "\(lanOnly.output)")
        }
    }
}
