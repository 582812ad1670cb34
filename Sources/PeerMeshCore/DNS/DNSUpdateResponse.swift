/// Checks a DNS server's answer to a signed UPDATE and turns its failures into errors that say what to do.
public enum DNSUpdateResponse {
    /// The answer's message when the update succeeded: same ID, a response, NOERROR, a TSIG signature that verifies
    /// against the request's MAC within the fudge of `now`. Otherwise the matching `PeerMeshError`: an error answer
    /// stays that error even unsigned (servers cannot sign BADKEY or BADSIG answers, and a forger gains nothing by
    /// making us fail), but success is believed only when signed.
    public static func check(_ bytes: [UInt8], to request: SignedDNSRequest, zone: DNSName, now: UInt64) throws -> DNSMessage {
        let message = try DNSMessage(decoding: bytes)
        guard message.isResponse, message.id == request.id else {
            throw TSIG.forged("it answers message \(message.id), not our request \(request.id)")
        }
        let tsig = try TSIG.signature(of: message)
        if let tsig, tsig.error != .noError {
            throw error(for: tsig.error, key: request.key.name, zone: zone, serverTime: serverTime(tsig))
        }
        guard message.responseCode == .noError else {
            throw error(for: message.responseCode, key: request.key.name, zone: zone)
        }
        return try TSIG.verify(bytes, key: request.key, requestMAC: request.mac, now: now).message
    }

    /// The error for a response code or TSIG error, saying what to do about it.
    public static func error(for code: DNSResponseCode, key: DNSName, zone: DNSName, serverTime: UInt64? = nil) -> PeerMeshError {
        let named = "\(code)"
        switch code {
        case .badKey:
            return PeerMeshError(.dnsKeyRejected, "The DNS server does not accept key '\(key)' for \(zone) (\(named)): check the "
                + "key file's key name matches the server's, and that the zone's update policy names this key")
        case .badSig:
            return PeerMeshError(.dnsKeyRejected, "The DNS server knows key '\(key)' but our signature does not verify (\(named)): "
                + "the key file's secret differs from the server's; copy the key file from the server again")
        case .badTime:
            let time = serverTime.map { " (the server's time is \($0))" } ?? ""
            return PeerMeshError(.dnsClockSkew, "The DNS server's clock and ours differ by more than 5 minutes (\(named))\(time): "
                + "set this machine's clock right, e.g. with NTP")
        case .badTrunc:
            return PeerMeshError(.dnsServerFailure, "The DNS server rejects the signature's MAC length (\(named)): it wants a "
                + "longer MAC than PeerMesh sent, which should not happen with full HMAC-SHA256; report it")
        case .refused:
            return PeerMeshError(.dnsUpdateRefused, "\(named): the server does not accept updates for \(zone) from this key/address: "
                + "check its update policy (Knot: acl … action: update; BIND: update-policy or allow-update)")
        case .notZone, .notAuth:
            return PeerMeshError(.dnsZoneNotServed, "Zone \(zone) not served by this server (\(named)): check the zone name, "
                + "or send the update to the zone's primary server (its SOA MNAME)")
        case .yxDomain, .yxRRSet, .nxRRSet:
            return PeerMeshError(.dnsPrerequisiteFailed, "The update's prerequisite did not hold (\(named)): the records in "
                + "\(zone) changed meanwhile; look them up and try again")
        case .formatError:
            return PeerMeshError(.dnsServerFailure, "The DNS server could not parse the update (\(named)): it may not support "
                + "DNS UPDATE or TSIG; check it is an authoritative server")
        case .notImplemented:
            return PeerMeshError(.dnsServerFailure, "The DNS server does not implement DNS UPDATE (\(named)): use the zone's "
                + "authoritative primary server")
        case .nameError:
            return PeerMeshError(.dnsServerFailure, "The DNS server answered \(named) for \(zone): it does not know that name; "
                + "check the zone name")
        default:
            return PeerMeshError(.dnsServerFailure, "The DNS server failed to apply the update to \(zone) (\(named)): look in "
                + "its log for why, then try again")
        }
    }

    /// The server's clock in a BADTIME answer's other data (6 bytes, RFC 8945 §5.2.3).
    private static func serverTime(_ tsig: TSIGRecord) -> UInt64? {
        guard tsig.error == .badTime, tsig.otherData.count == 6 else { return nil }
        return tsig.otherData.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
