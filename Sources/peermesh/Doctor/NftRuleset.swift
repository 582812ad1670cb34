import PeerMeshRoom
import FoundationEssentials

/// The kernel's firewall as `nft -a list ruleset` prints it (iptables-nft rules included), reduced to what decides
/// the fate of one kind of packet: base chains on a hook, their policy, and rules made of conditions and a verdict.
///
/// Only conditions whose meaning is certain are understood (protocol, port, interface, address, packet type). A
/// rule with any other condition (`ct state`, marks, limits, named sets…) might not match our packets, so it is
/// never blamed: the doctor would rather miss a rule than accuse one that does not drop us.
struct NftRuleset: Equatable, Sendable {
    /// A chain of a table.
    struct Chain: Equatable, Sendable {
        /// `inet`, `ip`, `ip6`, …
        var family: String
        /// The table's name.
        var table: String
        /// The chain's name.
        var name: String
        /// `input`, `output`, … for a base chain; nil for a regular chain (reached by `jump` or `goto`).
        var hook: String?
        /// `accept` or `drop` for a base chain.
        var policy: String?
        /// Its rules, in order.
        var rules: [Rule] = []
    }

    /// One rule: its text as nft prints it (without the handle comment) and its handle.
    struct Rule: Equatable, Sendable {
        /// The rule as printed, e.g. `udp dport 5353 counter packets 0 bytes 0 drop`.
        var text: String
        /// The handle `nft delete rule … handle N` takes, when `-a` printed it.
        var handle: Int?
    }

    /// The chains, in the order printed.
    var chains: [Chain]

    /// Parses `nft -a list ruleset` output. Sets, maps, flowtables and other objects are skipped.
    init(text: String) {
        var chains: [Chain] = []
        var table: (family: String, name: String)?
        var chain: Chain?
        var skipDepth = 0
        for raw in text.split(whereSeparator: \.isNewline) {
            var line = raw.trimmed
            var handle: Int?
            if let mark = line.ranges(of: "# handle ").last {
                handle = Int(line[mark.upperBound...].trimmed)
                line = line[..<mark.lowerBound].trimmed
            }
            if skipDepth > 0 {
                skipDepth += line.filter { $0 == "{" }.count - line.filter { $0 == "}" }.count
                continue
            }
            let words = line.split(separator: " ").map(String.init)
            guard let first = words.first else { continue }
            if chain != nil {
                if line == "}" {
                    chains.append(chain!)
                    chain = nil
                } else if first == "type", let hookAt = words.firstIndex(of: "hook"), hookAt + 1 < words.count {
                    chain!.hook = words[hookAt + 1]
                    if let policyAt = words.firstIndex(of: "policy"), policyAt + 1 < words.count {
                        chain!.policy = words[policyAt + 1].filter { $0 != ";" }
                    }
                } else if first == "policy", words.count > 1 {
                    chain!.policy = words[1].filter { $0 != ";" }
                } else if !line.isEmpty, !line.hasPrefix("#") {
                    chain!.rules.append(Rule(text: line, handle: handle))
                }
            } else if first == "table", words.count >= 3 {
                table = (words[1], words[2])
            } else if first == "chain", words.count >= 2, let table {
                chain = Chain(family: table.family, table: table.name, name: words[1])
            } else if line == "}" {
                table = nil
            } else if line.hasSuffix("{") {
                // set, map, flowtable, counter, quota, ct helper …: their bodies hold no rules.
                skipDepth = 1
            }
        }
        self.chains = chains
    }

    /// A kind of packet whose fate we ask about.
    struct Packet: Equatable, Sendable {
        /// `udp` or `tcp`.
        var proto: String
        /// Its destination port, or a range of ports any of which it may have (a room's port is chosen by the system).
        var destination: ClosedRange<Int>
        /// Its source port, when known (mDNS: 5353 both ways).
        var source: Int?
        /// Whether it is sent to a multicast address.
        var multicast: Bool
        /// The hooks it passes: `input` for what arrives, `output` for what we send.
        var hooks: Set<String>

        /// mDNS queries and answers: UDP 5353 → 5353, multicast, sent and received.
        static let mDNS = Packet(proto: "udp", destination: 5353...5353, source: 5353, multicast: true, hooks: ["input", "output"])

        /// A connection arriving at a room's listener on `ports`.
        static func roomConnection(_ ports: ClosedRange<Int>) -> Packet {
            Packet(proto: "tcp", destination: ports, source: nil, multicast: false, hooks: ["input"])
        }
    }

    /// Why a packet is dropped: a rule that drops it, or a base chain's drop policy that nothing before it accepts.
    struct Drop: Equatable, Sendable {
        /// The chain whose rule or policy drops it.
        var chain: Chain
        /// The rule, or nil when it is the chain's policy.
        var rule: Rule?
        /// Whether the rule also names an interface or address, so it may drop the packet on some networks only.
        var narrowed: Bool
    }

    /// Every place that drops `packet`: each base chain on one of its hooks is walked rule by rule (following
    /// `jump` and `goto`) until a rule that surely matches decides; a drop policy counts when the walk ends.
    func drops(_ packet: Packet) -> [Drop] {
        var found: [Drop] = []
        for chain in chains where chain.hook.map(packet.hooks.contains) == true {
            let verdict = walk(chain, packet, found: &found, depth: 0)
            if verdict == nil, chain.policy == "drop" {
                found.append(Drop(chain: chain, rule: nil, narrowed: false))
            }
        }
        return found
    }

    /// Walks `chain`: returns `accept` or `drop` when a rule that surely matches decides, nil when the walk falls
    /// through (or returns). Drops that may match are recorded and the walk goes on.
    private func walk(_ chain: Chain, _ packet: Packet, found: inout [Drop], depth: Int) -> String? {
        guard depth < 16 else { return nil }
        for rule in chain.rules {
            let parsed = NftRuleMatch(rule.text)
            guard let verdict = parsed.verdict, parsed.understood else { continue }
            let match = parsed.matches(packet)
            guard match != .none else { continue }
            // A rule that names an interface or address, or only some of the packet's possible ports, may or may
            // not apply: its drop is reported, but it decides nothing.
            let narrowed = parsed.narrowed || match == .some
            switch verdict {
            case .accept:
                if !narrowed { return "accept" }
            case .drop:
                found.append(Drop(chain: chain, rule: rule, narrowed: narrowed))
                if !narrowed { return "drop" }
            case .jump(let target), .goto(let target):
                guard let next = chains.first(where: { $0.family == chain.family && $0.table == chain.table && $0.name == target }) else { continue }
                if let decided = walk(next, packet, found: &found, depth: depth + 1), !narrowed { return decided }
                if case .goto = verdict, !narrowed { return nil }
            case .return:
                if !narrowed { return nil }
            }
        }
        return nil
    }
}

/// One nft rule's conditions and verdict, as far as they are understood.
struct NftRuleMatch: Equatable, Sendable {
    /// What the rule does when it matches.
    enum Verdict: Equatable, Sendable {
        /// `accept`: the packet passes this base chain.
        case accept
        /// `drop` or `reject`: the packet is gone.
        case drop
        /// `return`: back to the chain that jumped here.
        case `return`
        /// `jump CHAIN`: that chain's rules, then on here.
        case jump(String)
        /// `goto CHAIN`: that chain's rules, not back here.
        case goto(String)
    }

    /// The verdict, or nil when the rule has none (it only counts or logs).
    var verdict: Verdict?
    /// Whether every condition was understood; a rule with one that was not is never judged.
    var understood = true
    /// Whether it also names an interface or address (it may match on some networks only).
    var narrowed = false
    /// Protocols it is limited to (nil: any).
    var protocols: Set<String>?
    /// Destination ports it is limited to, and whether that is negated (`!=`).
    var destination: (ports: [ClosedRange<Int>], negated: Bool)?
    /// Source ports it is limited to, and whether that is negated.
    var source: (ports: [ClosedRange<Int>], negated: Bool)?
    /// Packet types it is limited to (`multicast`, `unicast`, …).
    var packetTypes: Set<String>?

    static func == (a: NftRuleMatch, b: NftRuleMatch) -> Bool {
        a.verdict == b.verdict && a.understood == b.understood && a.narrowed == b.narrowed && a.protocols == b.protocols
            && a.destination?.ports == b.destination?.ports && a.destination?.negated == b.destination?.negated
            && a.source?.ports == b.source?.ports && a.source?.negated == b.source?.negated && a.packetTypes == b.packetTypes
    }

    /// Port names nft may print instead of numbers (with `-S`).
    private static let services = ["mdns": 5353, "http": 80, "https": 443, "ssh": 22, "domain": 53]

    /// Reads the rule's text as nft prints it.
    init(_ text: String) {
        var tokens = Self.tokens(text)[...]
        func next() -> String? { tokens.popFirst() }
        func value() -> (values: [String], negated: Bool) {
            var negated = false
            if tokens.first == "!=" { negated = true; _ = next() } else if tokens.first == "==" { _ = next() }
            guard let first = next() else { return ([], negated) }
            guard first == "{" else { return ([first], negated) }
            var values: [String] = []
            while let token = next(), token != "}" {
                if token != "," { values.append(token) }
            }
            return (values, negated)
        }
        func ports(_ values: [String]) -> [ClosedRange<Int>]? {
            var ranges: [ClosedRange<Int>] = []
            for value in values {
                if let port = Int(value) ?? Self.services[value] {
                    ranges.append(port...port)
                } else if case let bounds = value.split(separator: "-"), bounds.count == 2, let low = Int(bounds[0]), let high = Int(bounds[1]), low <= high {
                    ranges.append(low...high)
                } else {
                    return nil
                }
            }
            return ranges
        }
        while let token = next() {
            switch token {
            case "counter":
                // `counter packets N bytes N`
                if tokens.first == "packets" { tokens = tokens.dropFirst(4) }
            case "log":
                while let option = tokens.first, ["prefix", "level", "flags", "group", "snaplen", "queue-threshold"].contains(option) {
                    tokens = tokens.dropFirst(2)
                }
            case "comment":
                _ = next()
            case "iif", "iifname", "oif", "oifname":
                _ = value()
                narrowed = true
            case "ip", "ip6":
                guard let field = next() else { understood = false; break }
                switch field {
                case "saddr", "daddr":
                    _ = value()
                    narrowed = true
                case "protocol", "nexthdr":
                    protocols = Set(value().values)
                default:
                    understood = false
                }
            case "meta":
                guard let field = next() else { understood = false; break }
                switch field {
                case "l4proto": protocols = Set(value().values)
                case "pkttype": packetTypes = Set(value().values)
                case "iif", "iifname", "oif", "oifname": _ = value(); narrowed = true
                default: understood = false
                }
            case "pkttype":
                packetTypes = Set(value().values)
            case "udp", "tcp", "th":
                if token != "th" { protocols = (protocols ?? [token]).intersection([token]) }
                guard let field = next(), field == "dport" || field == "sport" else { understood = false; break }
                let (values, negated) = value()
                guard let ranges = ports(values) else { understood = false; break }
                if field == "dport" { destination = (ranges, negated) } else { source = (ranges, negated) }
            case "accept": verdict = .accept
            case "drop": verdict = .drop
            case "reject":
                verdict = .drop
                // `reject with icmp type port-unreachable`, `reject with tcp reset`
                if tokens.first == "with" { tokens = tokens.dropFirst(tokens.dropFirst().first == "tcp" ? 3 : 4) }
            case "return": verdict = .return
            case "jump": verdict = next().map(Verdict.jump)
            case "goto": verdict = next().map(Verdict.goto)
            default:
                understood = false
            }
        }
    }

    /// How far a rule's conditions hold for a packet.
    enum Match: Equatable, Sendable {
        /// Not at all.
        case none
        /// For some of the ports the packet may have, not all.
        case some
        /// Whatever port in its range the packet has.
        case all
    }

    /// Whether the rule's understood conditions hold for `packet`.
    func matches(_ packet: NftRuleset.Packet) -> Match {
        if let protocols, !protocols.contains(packet.proto) { return .none }
        if let packetTypes, !packetTypes.contains(packet.multicast ? "multicast" : "unicast") { return .none }
        if let source {
            guard let port = packet.source else { return .none }
            if source.ports.contains(where: { $0.contains(port) }) == source.negated { return .none }
        }
        guard let destination else { return .all }
        let wanted = packet.destination
        let hit = destination.ports.filter { $0.overlaps(wanted) }
            .map { max($0.lowerBound, wanted.lowerBound)...min($0.upperBound, wanted.upperBound) }
        let covered = hit.reduce(0) { $0 + $1.count }  // the ranges nft prints do not overlap
        let matched = destination.negated ? wanted.count - covered : covered
        return matched == 0 ? .none : matched == wanted.count ? .all : .some
    }

    /// Words, with `{`, `}` and `,` as words of their own and quoted text kept whole.
    static func tokens(_ text: String) -> [String] {
        var tokens: [String] = [], current = "", quoted = false
        func flush() { if !current.isEmpty { tokens.append(current); current = "" } }
        for character in text {
            if quoted {
                current.append(character)
                if character == "\"" { quoted = false; flush() }
            } else if character == "\"" {
                flush(); current.append(character); quoted = true
            } else if character == " " || character == "\t" {
                flush()
            } else if "{},".contains(character) {
                flush(); tokens.append(String(character))
            } else {
                current.append(character)
            }
        }
        flush()
        return tokens
    }
}
