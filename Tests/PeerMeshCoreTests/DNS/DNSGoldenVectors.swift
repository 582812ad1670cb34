@testable import PeerMeshCore

/// Bytes captured from real DNS software (Debian 12 packages: bind9-dnsutils 1:9.18.49-1~deb12u3, knot-dnsutils and
/// knot 3.2.6-1), so the codec and TSIG are checked against other implementations, not only against themselves.
///
/// Key `pm-test.`, hmac-sha256, secret `AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=` (bytes 0...31), given to
/// nsupdate as the file `key "pm-test." { algorithm hmac-sha256; secret "AAECAwQF…Hh8="; };`.
///
/// The Knot captures ran inside `unshare -n` (loopback only): knotd 3.2.6 on 127.0.0.1@15353 with zones
/// `example.test.` (acl: key pm-test., action: update) and `locked.test.` (no acl), keys `pm-test.` and `other-key.`
/// (secret `AQECAwQF…Hh8=`, first byte 1), and a python3 UDP proxy on 127.0.0.1:15354 forwarding to knotd and writing
/// down each request and answer in hex. The example.test. zone held:
/// `_peermesh._tcp 120 PTR Alice\039s\032room\.1._peermesh._tcp`, its `SRV 0 0 7000 host`,
/// its `TXT "pm.v=2" "room=kitchen" ""`, `host 120 A 192.0.2.7`, `host 120 AAAA 2001:db8::7`,
/// `b._dns-sd._udp PTR @` (Knot stores and answers names in lower case: `alice's room.1`).
enum DNSGolden {
    static let keySecret: [UInt8] = Array(0...31)
    static let key = TSIGKey(name: DNSName(checked: [Array("pm-test".utf8)]), secret: keySecret)

    /// `nsupdate -t 1 -u 1 -r 0 -k pm-test.key nsupdate.cmd`, the datagram caught by a python3 socket bound to
    /// 127.0.0.1:15301 (which never answered), nsupdate.cmd being:
    /// `server 127.0.0.1 15301` / `zone example.test.` /
    /// `update delete _peermesh._tcp.example.test. PTR alice._peermesh._tcp.example.test.` /
    /// `update add _peermesh._tcp.example.test. 120 PTR alice._peermesh._tcp.example.test.` /
    /// `update add alice._peermesh._tcp.example.test. 120 SRV 0 0 7000 host.example.test.` /
    /// `update add alice._peermesh._tcp.example.test. 120 TXT "pm.v=2" "room=kitchen"` /
    /// `update add host.example.test. 120 A 192.0.2.7` / `send`. Time signed 0x6b0a9ef0.
    static let nsupdateRequest = hex(
        "c65c28000001000000050001076578616d706c6504746573740000060001095f706565726d657368045f746370076578616d",
        "706c65047465737400000c00fe00000000000805616c696365c01ec01e000c0001000000780002c045c04500210001000000",
        "780019000000001b5804686f7374076578616d706c65047465737400c0450010000100000078001406706d2e763d320c726f",
        "6f6d3d6b69746368656ec06d00010001000000780004c000020707706d2d746573740000fa00ff00000000003d0b686d6163",
        "2d7368613235360000006b0a9ef0012c00203f53edf519069529f049f5abe67164a8f204702acdd659eeb4102f9f695b2b8c",
        "c65c00000000",
    )

    /// `printf 'server 127.0.0.1 15354\nzone example.test.\nupdate add alice._peermesh._tcp.example.test. 120 TXT "x"\nsend\n'
    /// | knsupdate -t 2 -r 0 -y hmac-sha256:pm-test.:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=`: ID 0x5404,
    /// time signed 0x6b0a9f07.
    static let knsupdateRequest = hex(
        "540428000001000000010001076578616d706c650474657374000006000105616c696365095f706565726d657368045f7463",
        "70c00c00100001000000780002017807706d2d746573740000fa00ff00000000003d0b686d61632d7368613235360000006b",
        "0a9f07012c0020d9af6c710cdac48608c5a47dc74d8df380aedbed718b0f596755e8fe98b6b81c540400000000",
    )

    /// knotd's NOERROR answer to `knsupdateRequest`, signed with pm-test.
    static let knotAnswer = hex(
        "5404a8000001000000000001076578616d706c650474657374000006000107706d2d746573740000fa00ff00000000003d0b",
        "686d61632d7368613235360000006b0a9f07012c002011027ae12bd9716b18fb7e727c6a8a1ec364f8c341af4c2d6a0db88e",
        "f685000d540400000000",
    )

    /// The same update signed with `other-key.` (known to knotd, not in the zone's acl): NOTAUTH, TSIG error BADKEY,
    /// no MAC. Request ID 0x360a.
    static let knotAnswerKeyNotInACL = hex(
        "360aa8090001000000000001076578616d706c6504746573740000060001096f746865722d6b65790000fa00ff0000000000",
        "1d0b686d61632d7368613235360000006b0a9f07012c0000360a00110000",
    )

    /// Signed with `nokey.`, unknown to knotd: NOTAUTH, BADKEY. Request ID 0xcb94.
    static let knotAnswerUnknownKey = hex(
        "cb94a8090001000000000001076578616d706c6504746573740000060001056e6f6b65790000fa00ff00000000001d0b686d",
        "61632d7368613235360000006b0a9f07012c0000cb9400110000",
    )

    /// Signed with `pm-test.` and the other secret: NOTAUTH, BADSIG. Request ID 0xd5d5.
    static let knotAnswerWrongSecret = hex(
        "d5d5a8090001000000000001076578616d706c650474657374000006000107706d2d746573740000fa00ff00000000001d0b",
        "686d61632d7368613235360000006b0a9f07012c0000d5d500100000",
    )

    /// `zone other.test.` (not served): NOTAUTH, unsigned. Request ID 0xd937.
    static let knotAnswerZoneNotServed = hex(
        "d937a8090001000000000000056f7468657204746573740000060001",
    )

    /// Built by a python3 script (struct + hmac modules) following RFC 8945 §4.3.3, signed 3600 s in the past
    /// (time 0x6b0a9106): update bob.example.test. TXT "x", ID 0x1234. knotd accepted its MAC and answered BADTIME.
    static let badTimeRequest = hex(
        "123428000001000000010001076578616d706c650474657374000006000103626f62076578616d706c650474657374000010",
        "0001000000780002017807706d2d746573740000fa00ff00000000003d0b686d61632d7368613235360000006b0a9106012c",
        "0020777d0333e86e5ba22d5f73b302d1dc8d0fa58aeb47e764a127b314d59943fb20123400000000",
    )

    /// knotd's answer to `badTimeRequest`: NOTAUTH, TSIG error BADTIME, signed, other data = server time 0x6b0a9f16.
    static let knotAnswerBadTime = hex(
        "1234a8090001000000000001076578616d706c650474657374000006000107706d2d746573740000fa00ff0000000000430b",
        "686d61632d7368613235360000006b0a9106012c002063916c5ad395bea264072ec96ab4ac98ca980a09f749b279c98268ab",
        "f361079c12340012000600006b0a9f16",
    )

    /// `kdig @127.0.0.1 -p 15354 +notcp +noedns SOA example.test.` (before the zone gained the DNS-SD records).
    static let knotSOAAnswer = hex(
        "ca0f85000001000100000000076578616d706c6504746573740000060001c00c000600010000012c0021026e73c00c056164",
        "6d696ec00c0000000200000e1000000258000151800000012c",
    )

    /// `kdig @127.0.0.1 -p 15354 +notcp +noedns PTR _peermesh._tcp.example.test.`
    static let knotPTRAnswer = hex(
        "439e85000001000100000000095f706565726d657368045f746370076578616d706c65047465737400000c0001c00c000c00",
        "010000007800110e616c696365277320726f6f6d2e31c00c",
    )

    /// `kdig … SRV 'Alice\039s\032room\.1._peermesh._tcp.example.test.'`: the host's A and AAAA come as additionals.
    static let knotSRVAnswer = hex(
        "dd73850000010001000000020e616c696365277320726f6f6d2e31095f706565726d657368045f746370076578616d706c65",
        "04746573740000210001c00c00210001000000780019000000001b5804686f7374076578616d706c65047465737400c04e00",
        "010001000000780004c0000207c04e001c000100000078001020010db8000000000000000000000007",
    )

    /// `kdig … TXT 'Alice\039s\032room\.1._peermesh._tcp.example.test.'`
    static let knotTXTAnswer = hex(
        "0833850000010001000000000e616c696365277320726f6f6d2e31095f706565726d657368045f746370076578616d706c65",
        "04746573740000100001c00c0010000100000078001506706d2e763d320c726f6f6d3d6b69746368656e00",
    )

    /// `kdig … PTR b._dns-sd._udp.example.test.`
    static let knotBrowseDomainAnswer = hex(
        "cf4c850000010001000000000162075f646e732d7364045f756470076578616d706c65047465737400000c0001c00c000c00",
        "010000012c0002c01b",
    )

    /// `kdig … A nothere.example.test.`: NXDOMAIN with the zone's SOA (compressed names) in the authority section.
    static let knotNXDomainAnswer = hex(
        "a25f85030001000000010000076e6f7468657265076578616d706c6504746573740000010001c014000600010000012c0021",
        "026e73c0140561646d696ec0140000000100000e1000000258000151800000012c",
    )

    static func hex(_ parts: String...) -> [UInt8] {
        let text = Array(parts.joined().utf8)
        return stride(from: 0, to: text.count, by: 2).map { UInt8(String(decoding: text[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }
}
