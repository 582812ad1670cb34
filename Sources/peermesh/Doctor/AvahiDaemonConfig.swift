import PeerMeshRoom
import FoundationEssentials

/// avahi-daemon.conf as avahi-daemon reads it (an INI file: `[section]`, `key=value`, `#` and `;` comments), and
/// the settings in it that keep PeerMesh's rooms from being announced or found.
struct AvahiDaemonConfig: Equatable, Sendable {
    /// Where avahi-daemon reads it unless started with `-f FILE`.
    static let defaultPath = "/etc/avahi/avahi-daemon.conf"

    /// The file's path (named in the fixes).
    let path: String
    /// `section → key → value`, section and key names lowercased; the last of repeated keys wins, as in avahi.
    let values: [String: [String: String]]

    /// Parses `text`; lines that are neither a section, a setting nor a comment are ignored (avahi would refuse
    /// to start with them, which the daemon check then reports).
    init(path: String, text: String) {
        self.path = path
        var values: [String: [String: String]] = [:]
        var section = ""
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmed
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = line.dropFirst().dropLast().trimmed.lowercased()
                continue
            }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmed.lowercased()
            let value = line[line.index(after: equals)...].trimmed
            values[section, default: [:]][key] = value
        }
        self.values = values
    }

    /// The value of `key` in `section`, if set.
    func value(_ section: String, _ key: String) -> String? { values[section]?[key] }

    /// Whether `key` in `section` is set to avahi's spelling of `flag` (`yes`/`no`, case-insensitive); unset is
    /// never equal.
    func isSet(_ section: String, _ key: String, to flag: Bool) -> Bool {
        value(section, key)?.lowercased() == (flag ? "yes" : "no")
    }

    /// The settings that silence us, in the order avahi applies them, each with the command that sets it right.
    func findings(services: ServiceManager) -> [DoctorFinding] {
        var found: [DoctorFinding] = []
        func fix(_ key: String, _ value: String) -> String {
            // The key may be written with spaces around `=`: the pattern takes the whole line, whatever its spelling.
            "sudo sed -i 's/^[[:space:]]*\(key)[[:space:]]*=.*/\(key)=\(value)/' \(path) && \(services.restartAvahi)"
        }
        if isSet("server", "enable-dbus", to: false) {
            found.append(DoctorFinding(.avahiDBusDisabled, "\(path) sets enable-dbus=no: no program can publish or browse through avahi-daemon.",
                                       fix: fix("enable-dbus", "yes")))
        }
        let noIPv4 = isSet("server", "use-ipv4", to: false), noIPv6 = isSet("server", "use-ipv6", to: false)
        if noIPv4 && noIPv6 {
            found.append(DoctorFinding(.avahiIPDisabled, "\(path) sets use-ipv4=no and use-ipv6=no: avahi-daemon speaks mDNS on no network at all.",
                                       fix: fix("use-ipv4", "yes")))
        } else if noIPv4 {
            found.append(DoctorFinding(.avahiIPv4Disabled, .warning,
                                       "\(path) sets use-ipv4=no: machines that mDNS reaches only over IPv4 never see our rooms, nor we theirs.",
                                       fix: fix("use-ipv4", "yes")))
        }
        if isSet("publish", "disable-publishing", to: true) {
            found.append(DoctorFinding(.avahiPublishingDisabled, "\(path) sets disable-publishing=yes: rooms you host are never announced, so nobody sees them.",
                                       fix: fix("disable-publishing", "no")))
        }
        if isSet("publish", "disable-user-service-publishing", to: true) {
            found.append(DoctorFinding(.avahiUserPublishingDisabled,
                                       "\(path) sets disable-user-service-publishing=yes: programs may not announce services, so rooms you host are never seen.",
                                       fix: fix("disable-user-service-publishing", "no")))
        }
        if isSet("publish", "publish-addresses", to: false) {
            found.append(DoctorFinding(.avahiAddressesNotPublished,
                                       "\(path) sets publish-addresses=no: others see the names of rooms you host but cannot find this machine's address, so they cannot join.",
                                       fix: fix("publish-addresses", "yes")))
        }
        for key in ["allow-interfaces", "deny-interfaces"] {
            if let list = value("server", key), !list.isEmpty {
                found.append(DoctorFinding(.avahiInterfacesLimited, .warning,
                                           "\(path) sets \(key)=\(list): mDNS is \(key == "allow-interfaces" ? "only on" : "off on") those interfaces; rooms on the others are not seen.",
                                           fix: "sudo sed -i 's/^[[:space:]]*\(key)[[:space:]]*=/#\(key)=/' \(path) && \(services.restartAvahi)"))
            }
        }
        return found
    }
}
