extension PeerMeshError.Code {
    /// avahi-daemon (or the system D-Bus it talks through) is not running.
    public static let daemonNotRunning = Self("daemonNotRunning")
    /// avahi-daemon answered with an error; the message carries the Avahi error number.
    public static let avahiFailure = Self("avahiFailure")
    /// avahi-daemon went away while in use; discovery waits for it to come back.
    public static let discoveryDisconnected = Self("discoveryDisconnected")
    /// A service type broke one of the RFC 6335 rules (the message names the rule).
    public static let invalidServiceType = Self("invalidServiceType")
    /// A service instance name is not acceptable to DNS-SD.
    public static let invalidServiceName = Self("invalidServiceName")
    /// A discovery-info key or value breaks the TXT record rules of RFC 6763 §6.
    public static let invalidDiscoveryInfo = Self("invalidDiscoveryInfo")
    /// A discovery-info key uses the `pm.` prefix PeerMesh reserves for itself.
    public static let reservedKey = Self("reservedKey")
    /// The encoded TXT record would exceed its size limit (400 bytes by default).
    public static let discoveryInfoTooLarge = Self("discoveryInfoTooLarge")
    /// No free alternative service name was found within the allowed number of renames.
    public static let nameConflict = Self("nameConflict")
}

extension PeerMeshError {
    /// A discovery error; `underlyingCode` is an Avahi error number, kept in `underlying` for logs.
    public init(code: Code, message: String, underlyingCode: Int? = nil) {
        self.init(code, message)
        underlying = underlyingCode.map { "avahi error \($0)" }
    }

    /// The Avahi error number behind a discovery error, if any.
    public var underlyingCode: Int? {
        guard let underlying, underlying.hasPrefix("avahi error ") else { return nil }
        return Int(underlying.dropFirst("avahi error ".count))
    }
}
