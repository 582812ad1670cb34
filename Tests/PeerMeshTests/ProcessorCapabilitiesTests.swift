import Testing
@testable import PeerMesh
@testable import PeerMeshCore

/// What our record announces, read from /proc/cpuinfo as the kernel writes it.
@Suite struct ProcessorCapabilitiesTests {
    static let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu vme sse2 pclmulqdq ssse3 aes avx\nbugs\t\t:\n"
    static let x86WithoutAES = "processor\t: 0\nflags\t\t: fpu vme sse2 ssse3 avx\n"
    static let arm = "processor\t: 0\nBogoMIPS\t: 48.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n"
    static let raspberryPi4 = "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"

    @Test func aesGCMChannelsOnlyWithAESAndCarrylessMultiply() {
        #expect(MemberCapabilities.ofProcessor(cpuinfo: Self.x86, needing: ["aes", "pclmulqdq"]) == [.aesGCMChannels])
        #expect(MemberCapabilities.ofProcessor(cpuinfo: Self.x86WithoutAES, needing: ["aes", "pclmulqdq"]) == [])
        #expect(MemberCapabilities.ofProcessor(cpuinfo: Self.arm, needing: ["aes", "pmull"]) == [.aesGCMChannels])
        #expect(MemberCapabilities.ofProcessor(cpuinfo: Self.raspberryPi4, needing: ["aes", "pmull"]) == [])
        #expect(MemberCapabilities.ofProcessor(cpuinfo: "", needing: ["aes"]) == [])
    }
}
