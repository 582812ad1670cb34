import PeerMeshCore
import Testing

@Suite struct TSIGKeyFileTests {
    @Test func readsTsigKeygensFormat() throws {
        // As `tsig-keygen -a hmac-sha256 pm-test.` writes it, plus the comment styles BIND accepts.
        let text = """
            # a shell-style comment
            key "pm-test." {
            \talgorithm hmac-sha256; // a C++-style comment
            \t/* a C-style
            \t   comment */ secret "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
            };
            key second { algorithm HMAC-SHA256; secret "AQ=="; };
            """
        let keys = try TSIGKeyFile.parse(text)
        #expect(keys == [DNSGolden.key, TSIGKey(name: try DNSName("second"), secret: [1])])
    }

    @Test func readsKeymgrsFormat() throws {
        // `keymgr -t pm-gen hmac-sha256` from knot 3.2.6, verbatim.
        let text = """
            # hmac-sha256:pm-gen:VuPgMpS8L16vwPnv8FYNyGyylPCtzS3NzvJ/UZ9qbqk=
            key:
              - id: pm-gen
                algorithm: hmac-sha256
                secret: VuPgMpS8L16vwPnv8FYNyGyylPCtzS3NzvJ/UZ9qbqk=

            """
        let keys = try TSIGKeyFile.parse(text)
        #expect(keys.count == 1)
        #expect(keys[0].name == (try DNSName("pm-gen.")))
        #expect(keys[0].secret.count == 32 && keys[0].secret.prefix(3) == [0x56, 0xE3, 0xE0])
    }

    static let rejected: [(String, String)] = [
        ("key \"k\" { algorithm hmac-md5; secret \"AQ==\"; };", "supports hmac-sha256 only"),
        ("key:\n  - id: k\n    algorithm: hmac-sha512\n    secret: AQ==\n", "supports hmac-sha256 only"),
        ("key \"k\" { algorithm hmac-sha256; secret \"not base64!\"; };", "not base64"),
        ("key \"k\" { algorithm hmac-sha256; };", "no secret"),
        ("key \"k\" { algorithm hmac-sha256 secret \"AQ==\"; };", "malformed"),
        ("options { };", "malformed"),
        ("", "No TSIG key found"),
        ("key:\n  - id: a..b\n    algorithm: hmac-sha256\n    secret: AQ==\n", "not a DNS name"),
    ]

    @Test(arguments: rejected)
    func rejectsWithAReason(text: String, says: String) {
        expectPeerMeshError(of: { try TSIGKeyFile.parse(text) }) {
            $0.code == .invalidTSIGKey && $0.message.contains(says)
        }
    }
}
