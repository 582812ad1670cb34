import PeerMesh

/// A host's watch for another room of the same name nearby: joiners would then have to say which one they mean
/// (`lobby@alice`), so the host is told at once, and told what its own room is called now.
package enum TwinRooms {
    /// Browses until cancelled; warns once per other room that has `ours`' name (ignoring case).
    package static func watch(for ours: RoomIdentity, session: Session, serviceType: String, wideArea: WideAreaDiscovery, output: RoomOutput) async {
        guard let search = try? RoomSearch(session: session, serviceType: serviceType, wideArea: wideArea, output: output), (try? await search.start()) != nil else { return }
        defer { search.browser.stop() }
        _ = await search.run(until: nil) { _, change in
            guard case .room(let other) = change, let line = warning(about: other, ours: ours) else { return .keepLooking }
            output.event(.twinRoom(.init(room: other.name, host: other.hostName, hostId: other.hostID, hostFingerprint: other.hostFingerprint,
                                         yours: ours.label)), human: line)
            return .keepLooking
        }
    }

    /// The warning when `other` is a different room with our name; nil otherwise.
    package static func warning(about other: RoomIdentity, ours: RoomIdentity) -> TerminalLine? {
        guard RoomIdentity.sameName(other.name, ours.name), other.hostID != ours.hostID else { return nil }
        return """
            another room called "\(other.name)" is hosted nearby by \(other.hostName) (key \(other.hostFingerprint)); people \
            joining must now say which: yours is \(ours.label), theirs \(other.label)
            """
    }
}
