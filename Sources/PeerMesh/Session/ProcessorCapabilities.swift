import FoundationEssentials
import PeerMeshCore

extension MemberCapabilities {
    /// What this processor does well, for our record: `aesGCMChannels` with AES and carry-less multiply
    /// instructions (x86-64 AES-NI + PCLMULQDQ, ARMv8 AES + PMULL). Without them AES-GCM runs in constant-time
    /// software, slower than ChaCha20-Poly1305, so members keep sealing our channel frames with ChaCha20.
    static let ofThisProcessor: MemberCapabilities = {
        #if os(Linux)
        guard let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return [] }
        #if arch(x86_64)
        return ofProcessor(cpuinfo: cpuinfo, needing: ["aes", "pclmulqdq"])
        #elseif arch(arm64)
        return ofProcessor(cpuinfo: cpuinfo, needing: ["aes", "pmull"])
        #else
        return []
        #endif
        #else
        // Every Mac PeerMesh supports (macOS 14) has AES instructions.
        return [.aesGCMChannels]
        #endif
    }()

    /// `aesGCMChannels` when the first feature line of `cpuinfo` (x86's `flags`, ARM's `Features`; every processor's
    /// line is the same on the machines this runs on) lists all of `needing`.
    static func ofProcessor(cpuinfo: String, needing: Set<String>) -> MemberCapabilities {
        guard let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("flags") || $0.hasPrefix("Features") }),
              let colon = line.firstIndex(of: ":")
        else { return [] }
        let features = Set(line[line.index(after: colon)...].split(whereSeparator: \.isWhitespace).map(String.init))
        return features.isSuperset(of: needing) ? [.aesGCMChannels] : []
    }
}
