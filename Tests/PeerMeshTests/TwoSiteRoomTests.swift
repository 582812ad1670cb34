import Foundation
import PeerMeshTestSupport
import Testing

/// One room across two sites (#40 item 3, "two sites, one room, real parts"): `peermesh` processes on a
/// `TwoSiteNetwork`, where a gateway publishes the room into a unicast DNS zone, the other site's gateway finds it
/// there and joins through the WireGuard tunnel, and each site's member joins on its own LAN by mDNS as always.
@Suite(.enabled(if: TestEnv.insideTestHost, "needs test hosts: run Scripts/test"), .timeLimit(.minutes(4)))
struct TwoSiteRoomTests {
    @Test func messagesAndFilesCrossBothWaysAndAGatewaysDeathIsClearOnBothSites() async throws {
        try await TwoSiteNetwork.with { network in
            let room = try await Members.enter(network)
            defer { room.remove() }

            // Member to member, each way: m1's words reach m2 through g1, the tunnel and g2 (and back).
            try room.desk1.send(line: "hello from site 1")
            #expect(await room.desk2.line(within: 10, containing: "desk1: hello from site 1") != nil, "\(room.desk2.output)")
            try room.desk2.send(line: "hello from site 2")
            #expect(await room.desk1.line(within: 10, containing: "desk2: hello from site 2") != nil, "\(room.desk1.output)")

            // A file each way, SHA-256 verified by every member, the other site's included.
            for (sender, senderName, receiver, receiverName) in [(room.desk1, "desk1", room.desk2, "desk2"), (room.desk2, "desk2", room.desk1, "desk1")] {
                let file = try room.place.file("from-\(senderName).bin", bytes: 3 << 20)
                try sender.send(line: "/send \(file.path)")
                #expect(await sender.line(within: 60, containing: "delivered and verified by 3 member(s)") != nil, "\(sender.output)")
                #expect(await receiver.line(within: 10, containing: "received \"\(file.lastPathComponent)\" from \(senderName) (SHA-256 verified)") != nil,
                        "\(receiver.output)")
                #expect(try Data(contentsOf: room.place.downloads(receiverName).appendingPathComponent(file.lastPathComponent)) == Data(contentsOf: file))
            }

            // The second site's gateway program dies (the tunnel stays: m2 loses its only member, not the network).
            // Site 1 says that g2 and m2 left; m2 that g2, g1 and m1 left.
            let markers = (gate1: room.gate1.lines.count, desk1: room.desk1.lines.count, desk2: room.desk2.lines.count)
            kill(room.gate2.pid, SIGKILL)
            for (watcher, marker) in [(room.gate1, markers.gate1), (room.desk1, markers.desk1)] {
                for gone in ["gate2", "desk2"] {
                    #expect(await watcher.line(after: marker, within: 20, containing: "\(gone) left") != nil, "\(watcher.output)")
                }
            }
            for gone in ["gate2", "gate1", "desk1"] {
                #expect(await room.desk2.line(after: markers.desk2, within: 20, containing: "\(gone) left") != nil, "\(room.desk2.output)")
            }

            // Nothing is lost on site 1: its two still talk, both ways.
            try room.desk1.send(line: "still here on site 1")
            #expect(await room.gate1.line(within: 10, containing: "desk1: still here on site 1") != nil, "\(room.gate1.output)")
            try room.gate1.send(line: "so am I")
            #expect(await room.desk1.line(within: 10, containing: "gate1: so am I") != nil, "\(room.desk1.output)")
            // m2 stays in the room, alone: it says so, and says a line it types reached nobody.
            #expect(room.desk2.exitStatus == nil, "\(room.desk2.output)")
            let alone = room.desk2.lines.count
            try room.desk2.send(line: "/peers")
            #expect(await room.desk2.line(after: alone, within: 10, containing: "nobody else is in the room") != nil, "\(room.desk2.output)")
            try room.desk2.send(line: "anyone?")
            #expect(await room.desk2.line(after: alone, within: 10, containing: "Nobody else is in the room yet; your line was not sent.") != nil,
                    "\(room.desk2.output)")
            room.stop()
        }
    }
}
