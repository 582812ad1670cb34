import Foundation
import PeerMeshCore

extension MemberCapabilities {
    /// What this processor does well, for our record: `aesGCMChannels` with AES and carry-less multiply
    /// instructions (x86-64 AES-NI + PCLMULQDQ, ARMv8 AES + PMULL). Without them AES-GCM runs in constant-time
    /// software, slower than ChaCha20-Poly1305, so members keep sealing our channel frames with ChaCha20.
    static let ofThisProcessor: MemberCapabilities = {
        #if os(Linux)
        guard let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return [] }
        // The first processor's feature line is every processor's on the machines this runs on.
        guard let line = cpuinfo.split(separator: "\n").first(where: { $0.hasPrefix("flags") || $0.hasPrefix("Features") }) else { return [] }
        let features = Set(line.split(separator: ":").last?.split(separator: " ").map(String.init) ?? [])
        #if arch(x86_64)
        return features.isSuperset(of: ["aes", "pclmulqdq"]) ? [.aesGCMChannels] : []
        #elseif arch(arm64)
        return features.isSuperset(of: ["aes", "pmull"]) ? [.aesGCMChannels] : []
        #else
        return []
        #endif
        #else
        // Every Mac PeerMesh supports (macOS 14) has AES instructions.
        return [.aesGCMChannels]
        #endif
    }()
}
