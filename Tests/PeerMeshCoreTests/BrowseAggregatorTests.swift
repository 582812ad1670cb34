import PeerMeshCore
import Testing

private let alice = String(repeating: "a1", count: 32)
private let bob = String(repeating: "b2", count: 32)

private func txt(_ id: String, name: String = "n", extra: [String] = []) -> [[UInt8]] {
    (["pm.id=\(id)", "pm.n=\(name)"] + extra).map { Array($0.utf8) }
}

private func key(_ name: String, if index: Int32 = 2, _ version: IPVersion = .v4) -> BrowseRecordKey {
    BrowseRecordKey(interfaceIndex: index, ipVersion: version, name: name, type: "_pm._tcp", domain: "local")
}

private func ep(_ host: String, if index: Int32 = 2) -> PeerEndpoint { PeerEndpoint(host: host, port: 7000, interfaceIndex: index) }

@Suite struct BrowseAggregatorTests {
    @Test func onePeerOnManyRecordsIsFoundOnceAndLostOnce() {
        var agg = BrowseAggregator()
        let ad = PeerAdvertisement(peerKey: alice, displayName: "n")
        #expect(agg.handle(.resolved(key("A"), txt: txt(alice), endpoint: ep("10.0.0.1"))) == [.found(ad, endpoints: [ep("10.0.0.1")])])
        #expect(agg.handle(.resolved(key("A", .v6), txt: txt(alice), endpoint: ep("fe80::1"))) == [
            .updated(ad, endpoints: [ep("10.0.0.1"), ep("fe80::1")]),
        ])
        // Same endpoint on a re-resolve: nothing to say.
        #expect(agg.handle(.resolved(key("A", .v6), txt: txt(alice), endpoint: ep("fe80::1"))) == [])
        #expect(agg.handle(.resolved(key("A", if: 3), txt: txt(alice), endpoint: ep("10.0.1.1", if: 3))).count == 1)
        #expect(agg.handle(.removed(key("A"))) == [.updated(ad, endpoints: [ep("fe80::1"), ep("10.0.1.1", if: 3)])])
        #expect(agg.handle(.removed(key("A", .v6))).count == 1)
        #expect(agg.handle(.removed(key("A", if: 3))) == [.lost(peerKey: alice)])
        #expect(agg.handle(.removed(key("A", if: 3))) == [])
        #expect(agg.peerKeys.isEmpty)
    }

    @Test func twoPeersAreIndependent() {
        var agg = BrowseAggregator()
        _ = agg.handle(.resolved(key("A"), txt: txt(alice), endpoint: ep("10.0.0.1")))
        _ = agg.handle(.resolved(key("B"), txt: txt(bob), endpoint: ep("10.0.0.2")))
        #expect(agg.peerKeys == [alice, bob])
        #expect(agg.handle(.removed(key("A"))) == [.lost(peerKey: alice)])
        #expect(agg.peerKeys == [bob])
    }

    @Test func recordsWithoutValidKeyAreSkippedWithReason() {
        var agg = BrowseAggregator()
        #expect(agg.handle(.resolved(key("X"), txt: [Array("other=app".utf8)], endpoint: nil)) == [.skipped(key("X"), .missingPeerKey)])
        #expect(agg.handle(.resolved(key("Y"), txt: txt("ABC"), endpoint: nil)) == [.skipped(key("Y"), .malformedPeerKey)])
        #expect(agg.handle(.resolved(key("Z"), txt: txt(alice.uppercased()), endpoint: nil)) == [.skipped(key("Z"), .malformedPeerKey)])
        #expect(agg.handle(.resolved(key("W"), txt: [Array("pm.id".utf8)], endpoint: nil)) == [.skipped(key("W"), .malformedPeerKey)])
        #expect(agg.peerKeys.isEmpty)
    }

    @Test func recordThatChangesPeerMovesOver() {
        var agg = BrowseAggregator()
        _ = agg.handle(.resolved(key("A"), txt: txt(alice), endpoint: ep("10.0.0.1")))
        let out = agg.handle(.resolved(key("A"), txt: txt(bob), endpoint: ep("10.0.0.1")))
        #expect(out == [.lost(peerKey: alice), .found(PeerAdvertisement(peerKey: bob, displayName: "n"), endpoints: [ep("10.0.0.1")])])
    }

    @Test func recordThatLosesItsKeyDropsThePeer() {
        var agg = BrowseAggregator()
        _ = agg.handle(.resolved(key("A"), txt: txt(alice), endpoint: ep("10.0.0.1")))
        #expect(agg.handle(.resolved(key("A"), txt: [], endpoint: ep("10.0.0.1"))) == [
            .lost(peerKey: alice), .skipped(key("A"), .missingPeerKey),
        ])
    }

    @Test func changedAdvertisementIsAnUpdate() {
        var agg = BrowseAggregator()
        _ = agg.handle(.resolved(key("A"), txt: txt(alice, name: "old"), endpoint: ep("10.0.0.1")))
        let out = agg.handle(.resolved(key("A"), txt: txt(alice, name: "new", extra: ["room=1"]), endpoint: ep("10.0.0.1")))
        #expect(out == [.updated(PeerAdvertisement(peerKey: alice, displayName: "new", discoveryInfo: ["room": "1"]), endpoints: [ep("10.0.0.1")])])
    }

    @Test func recordCountIsBounded() {
        var agg = BrowseAggregator(maxRecords: 2)
        _ = agg.handle(.resolved(key("A"), txt: txt(alice), endpoint: nil))
        _ = agg.handle(.resolved(key("B"), txt: txt(bob), endpoint: nil))
        let third = String(repeating: "c3", count: 32)
        #expect(agg.handle(.resolved(key("C"), txt: txt(third), endpoint: nil)) == [.skipped(key("C"), .tooManyRecords(limit: 2))])
        // Re-resolving a tracked record is still fine at the limit.
        #expect(agg.handle(.resolved(key("A"), txt: txt(alice), endpoint: ep("10.0.0.1"))).count == 1)
    }
}
