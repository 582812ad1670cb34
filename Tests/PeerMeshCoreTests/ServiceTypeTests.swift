import PeerMeshCore
import Testing

@Suite struct ServiceTypeTests {
    static let cases: [(String, ServiceType.Rule?)] = [
        ("chat", nil), ("a", nil), ("peer-mesh", nil), ("a1-b2-c3", nil), ("x9", nil), ("abcdefghijklmno", nil),
        ("", .length), ("abcdefghijklmnop", .length),
        ("Chat", nil), ("PICTIONARY", nil), ("chat_app", .characters), ("chät", .characters), ("chat.app", .characters),
        ("chat app", .characters), ("_chat", .characters),
        ("123", .needsLetter), ("1-2", .needsLetter),
        ("-chat", .hyphenAtEdge), ("chat-", .hyphenAtEdge), ("-", .needsLetter),
        ("chat--app", .adjacentHyphens),
    ]

    @Test func casesOfOneNameAreOneType() throws {
        #expect(try ServiceType("Pictionary") == ServiceType("pictionary"))
        #expect(try ServiceType("Pictionary").name == "pictionary")
    }

    @Test(arguments: cases)
    func rules(name: String, broken: ServiceType.Rule?) {
        #expect(ServiceType.brokenRule(name) == broken)
        do {
            let type = try ServiceType(name)
            #expect(broken == nil)
            #expect(type.dnsSDType == "_\(name.lowercased())._tcp", "RFC 6335 names are case-insensitive: kept in lower case")
        } catch {
            #expect(error.code == .invalidServiceType)
            if let broken { #expect(error.message.contains(broken.explanation)) }
        }
    }
}
