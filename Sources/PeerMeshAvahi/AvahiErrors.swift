import CAvahi
import PeerMeshCore

extension PeerMeshError {
    /// The error for an Avahi error number, with a message that says what to do.
    static func avahi(_ code: Int32, _ context: String) -> PeerMeshError {
        let text = avahi_strerror(code).map { String(cString: $0) } ?? "unknown error"
        switch Int(code) {
        case AVAHI_ERR_NO_DAEMON:
            return .daemonNotRunning(underlying: Int(code))
        case AVAHI_ERR_DISCONNECTED:
            return PeerMeshError(
                code: .discoveryDisconnected,
                message: "\(context): lost the connection to avahi-daemon; waiting for it to come back",
                underlyingCode: Int(code)
            )
        default:
            return PeerMeshError(code: .avahiFailure, message: "\(context): \(text)", underlyingCode: Int(code))
        }
    }

    /// avahi-daemon (or the system D-Bus) is not running.
    static func daemonNotRunning(underlying: Int? = nil) -> PeerMeshError {
        PeerMeshError(
            code: .daemonNotRunning,
            message: "avahi-daemon is not running: start it with `systemctl start avahi-daemon` (or `avahi-daemon -D`); "
                + "it needs the system D-Bus (`systemctl start dbus`)",
            underlyingCode: underlying
        )
    }
}
