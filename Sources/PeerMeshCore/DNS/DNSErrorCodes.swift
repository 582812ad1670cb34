extension PeerMeshError.Code {
    /// A DNS name breaks a length rule (63-byte labels, 255 wire bytes) or its text form has a bad escape.
    public static let invalidDNSName = Self("invalidDNSName")
    /// A DNS record cannot be encoded: a TXT string over 255 bytes, record data over 65535 bytes, or a bad address.
    public static let invalidDNSRecord = Self("invalidDNSRecord")
    /// Bytes received as a DNS message are truncated, have trailing bytes, or break the wire format.
    public static let malformedDNSMessage = Self("malformedDNSMessage")
    /// The DNS server does not accept our TSIG key (BADKEY) or our signature (BADSIG): the key's name, secret or
    /// the server's access list do not match.
    public static let dnsKeyRejected = Self("dnsKeyRejected")
    /// Our clock and the DNS server's differ by more than the signature's fudge (BADTIME).
    public static let dnsClockSkew = Self("dnsClockSkew")
    /// The DNS server is not authoritative for the zone we tried to update (NOTZONE, NOTAUTH).
    public static let dnsZoneNotServed = Self("dnsZoneNotServed")
    /// The DNS server's policy does not allow this update (REFUSED).
    public static let dnsUpdateRefused = Self("dnsUpdateRefused")
    /// An update's prerequisite did not hold (YXDOMAIN, YXRRSET, NXRRSET): the zone changed under us.
    public static let dnsPrerequisiteFailed = Self("dnsPrerequisiteFailed")
    /// The DNS server failed or did not understand the request (SERVFAIL, FORMERR, NOTIMP, NXDOMAIN, other codes).
    public static let dnsServerFailure = Self("dnsServerFailure")
    /// A DNS answer that should be signed is unsigned, its signature does not verify, or it answers another request:
    /// it may not come from the server, so it is not taken as a success.
    public static let dnsForgedAnswer = Self("dnsForgedAnswer")
    /// A TSIG key file could not be parsed, or names an algorithm other than hmac-sha256.
    public static let invalidTSIGKey = Self("invalidTSIGKey")
    /// No DNS server answered within the tries allowed (or none is configured): check it runs and is reachable, or
    /// name one with `--dns-server ADDR[:PORT]`.
    public static let dnsNoAnswer = Self("dnsNoAnswer")
    /// A DNS server refused the TCP connection: nothing listens at that address and port.
    public static let dnsConnectionRefused = Self("dnsConnectionRefused")
    /// A DNS server address given as text is not `ADDR`, `ADDR:PORT` or `[IPv6]:PORT`.
    public static let invalidDNSServer = Self("invalidDNSServer")
    /// A room to publish into a domain has no address other sites could reach: none given, or the one given is
    /// loopback, link-local or not an interface here.
    public static let noPublishableAddress = Self("noPublishableAddress")
}
