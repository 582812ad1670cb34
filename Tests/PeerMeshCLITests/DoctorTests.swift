import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// `peermesh doctor`'s judgement (issue #36 item 5): avahi-daemon.conf, nft rulesets and observations in, findings
/// with their codes and fixes out.
struct DoctorTests {
    // MARK: avahi-daemon.conf

    @Test func aStockConfigSilencesNothing() {
        let stock = """
            [server]
            #host-name=foo
            use-ipv4=yes
            use-ipv6=yes
            ratelimit-interval-usec=1000000
            [wide-area]
            enable-wide-area=yes
            [publish]
            #disable-publishing=no
            #publish-addresses=yes
            publish-hinfo=no
            """
        #expect(AvahiDaemonConfig(path: "/etc/avahi/avahi-daemon.conf", text: stock).findings(services: .systemd).isEmpty)
    }

    @Test func eachSilencingSettingIsNamedWithTheCommandThatUndoesIt() throws {
        let text = """
            [server]
            use-ipv4 = no
            enable-dbus=no
            allow-interfaces=eth1
            ; a comment
            [publish]
            disable-publishing=YES
            disable-user-service-publishing=yes
            publish-addresses=no
            """
        let findings = AvahiDaemonConfig(path: "/x/avahi.conf", text: text).findings(services: .systemd)
        #expect(findings.map(\.code) == [.avahiDBusDisabled, .avahiIPv4Disabled, .avahiPublishingDisabled,
                                         .avahiUserPublishingDisabled, .avahiAddressesNotPublished, .avahiInterfacesLimited])
        let addresses = try #require(findings.first { $0.code == .avahiAddressesNotPublished })
        #expect(addresses.severity == .problem)
        #expect(addresses.fix == "sudo sed -i 's/^[[:space:]]*publish-addresses[[:space:]]*=.*/publish-addresses=yes/' /x/avahi.conf && sudo systemctl restart avahi-daemon")
        #expect(findings.first { $0.code == .avahiIPv4Disabled }?.severity == .warning)
    }

    @Test func bothIPVersionsOffIsOneProblemAndManualDaemonsAreRestartedByHand() {
        let findings = AvahiDaemonConfig(path: "/c", text: "[server]\nuse-ipv4=no\nuse-ipv6=no\n").findings(services: .manual)
        #expect(findings.map(\.code) == [.avahiIPDisabled])
        #expect(findings.first?.fix?.hasSuffix("&& sudo avahi-daemon -k; sudo avahi-daemon -D") == true)
    }

    @Test func settingsOutsideTheirSectionDoNotCount() {
        // publish-addresses belongs to [publish]: avahi ignores it under [server], and so do we.
        #expect(AvahiDaemonConfig(path: "/c", text: "[server]\npublish-addresses=no\n").findings(services: .systemd).isEmpty)
    }

    // MARK: nft rulesets

    static func ruleset(_ chainBody: String, hook: String = "input", policy: String = "accept") -> NftRuleset {
        NftRuleset(text: """
            table inet filter { # handle 4
            \tset blocked { # handle 2
            \t\ttype ipv4_addr
            \t\telements = { 10.0.0.1,
            \t\t\t     10.0.0.2 }
            \t}
            \tchain in { # handle 1
            \t\ttype filter hook \(hook) priority filter; policy \(policy);
            \(chainBody)
            \t}
            }
            """)
    }

    @Test func anEmptyRulesetDropsNothing() {
        #expect(NftRuleset(text: "").drops(.mDNS).isEmpty)
        #expect(Self.ruleset("").drops(.mDNS).isEmpty)
        #expect(Self.ruleset("").drops(.roomConnection(32768...60999)).isEmpty)
    }

    @Test func aRuleDroppingUDP5353IsFoundWithItsHandle() throws {
        let rules = Self.ruleset("\t\tudp dport 5353 counter packets 3 bytes 300 drop # handle 7")
        let drop = try #require(rules.drops(.mDNS).first)
        #expect(drop.rule == NftRuleset.Rule(text: "udp dport 5353 counter packets 3 bytes 300 drop", handle: 7))
        #expect(drop.chain.family == "inet" && drop.chain.table == "filter" && drop.chain.name == "in" && !drop.narrowed)
        let check = FirewallObservation.ruleset(rules).check(roomPorts: 40000...40000)
        #expect(check.findings.map(\.code) == [.firewallDropsMDNS])
        #expect(check.findings.first?.fix == "sudo nft delete rule inet filter in handle 7")
        // Rooms' TCP connections pass.
        #expect(rules.drops(.roomConnection(40000...40000)).isEmpty)
    }

    @Test func setsRangesIptablesNftSpellingAndRejectAllCount() {
        for rule in ["udp dport { 53, 5353 } drop", "udp dport 5000-6000 reject", "meta l4proto udp udp dport 5353 counter packets 0 bytes 0 drop",
                     "meta l4proto udp drop", "ip protocol udp reject with icmp type port-unreachable", "meta pkttype multicast drop", "drop",
                     "udp sport 5353 drop", "iifname \"eth0\" udp dport 5353 drop"] {
            #expect(!Self.ruleset("\t\t\(rule) # handle 9").drops(.mDNS).isEmpty, "\(rule)")
        }
        // An interface or address narrows the rule: reported, as a warning.
        let narrowed = FirewallObservation.ruleset(Self.ruleset("\t\tip saddr 10.0.0.0/8 udp dport 5353 drop # handle 9")).check(roomPorts: 1...1)
        #expect(narrowed.findings.map(\.severity) == [.warning])
    }

    @Test func rulesThatDoNotTouchMDNSOrCannotBeJudgedAreLeftAlone() {
        for rule in ["udp dport 53 drop", "udp dport != 5353 drop", "tcp dport 5353 drop", "ct state invalid drop",
                     "udp dport @blocked drop", "meta pkttype unicast drop", "udp dport 5353 counter packets 0 bytes 0",
                     "udp dport 5353 accept", "limit rate 10/second drop"] {
            #expect(Self.ruleset("\t\t\(rule) # handle 9").drops(.mDNS).isEmpty, "\(rule)")
        }
    }

    @Test func anEarlierAcceptWinsAndADropPolicyCountsOnlyWhenNothingAccepts() throws {
        #expect(Self.ruleset("\t\tudp dport 5353 accept # handle 3\n\t\tdrop # handle 4").drops(.mDNS).isEmpty)
        #expect(Self.ruleset("\t\tudp dport 5353 accept # handle 3", policy: "drop").drops(.mDNS).isEmpty)
        let policy = Self.ruleset("\t\tct state established,related accept # handle 3", policy: "drop")
        let drop = try #require(policy.drops(.mDNS).first)
        #expect(drop.rule == nil)
        let check = FirewallObservation.ruleset(policy).check(roomPorts: 41000...41000)
        #expect(check.findings.map(\.code) == [.firewallDropsMDNS, .firewallDropsPort])
        #expect(check.findings.map(\.fix) == ["sudo nft insert rule inet filter in udp dport 5353 accept",
                                              "sudo nft insert rule inet filter in tcp dport 41000 accept"])
    }

    @Test func theRoomPortIsJudgedAsGivenOrAsTheWholeEphemeralRange() {
        let one = Self.ruleset("\t\ttcp dport 41000 drop # handle 5")
        #expect(FirewallObservation.ruleset(one).check(roomPorts: 41000...41000).findings.map(\.code) == [.firewallDropsPort])
        #expect(FirewallObservation.ruleset(one).check(roomPorts: 41001...41001).findings.isEmpty)
        // Without --port: one port of the range is a warning (a room may get it), all TCP is a problem.
        #expect(FirewallObservation.ruleset(one).check(roomPorts: 32768...60999).findings.map(\.severity) == [.warning])
        let all = Self.ruleset("\t\tmeta l4proto tcp drop # handle 5")
        #expect(FirewallObservation.ruleset(all).check(roomPorts: 32768...60999).findings.map(\.severity) == [.problem])
        // Only what arrives: an output chain does not stop connections to our listener.
        #expect(Self.ruleset("\t\ttcp dport 41000 drop # handle 5", hook: "output").drops(.roomConnection(41000...41000)).isEmpty)
    }

    @Test func jumpsAreFollowedAndRegularChainsAloneDecideNothing() {
        let text = """
            table ip fw {
            \tchain guard {
            \t\tudp dport 5353 drop # handle 8
            \t}
            \tchain unused {
            \t\ttcp dport 41000 drop # handle 9
            \t}
            \tchain INPUT {
            \t\ttype filter hook input priority filter; policy accept;
            \t\tiifname "eth0" jump guard # handle 10
            \t}
            }
            """
        let rules = NftRuleset(text: text)
        #expect(rules.drops(.mDNS).map(\.rule?.handle) == [8])
        #expect(rules.drops(.roomConnection(41000...41000)).isEmpty)
    }

    // MARK: observations

    @Test func avahiFindingsNameTheFirstThingMissing() {
        func codes(_ o: AvahiObservation, _ services: ServiceManager = .systemd) -> [DoctorFinding] { o.check(services: services).findings }
        #expect(codes(.init(installed: true, systemBus: true, running: true, answers: true)).isEmpty)
        #expect(codes(.init(installed: false, systemBus: true, running: false, answers: false)).map(\.fix) == ["sudo apt install avahi-daemon"])
        #expect(codes(.init(installed: true, systemBus: false, running: false, answers: false)).map(\.code) == [.dbusStopped])
        #expect(codes(.init(installed: true, systemBus: true, running: false, answers: false)).map(\.fix) == ["sudo systemctl enable --now avahi-daemon"])
        #expect(codes(.init(installed: true, systemBus: true, running: false, answers: false), .manual).map(\.fix) == ["sudo avahi-daemon -D"])
        #expect(codes(.init(installed: true, systemBus: true, running: true, answers: false)).map(\.code) == [.avahiUnreachable])
    }

    @Test func multicastMustReachBeyondLoopback() {
        let lo = NetworkInterface(name: "lo", up: true, carrier: true, multicast: false, loopback: true, addresses: ["127.0.0.1"])
        let eth = NetworkInterface(name: "eth0", up: true, carrier: true, multicast: true, loopback: false, addresses: ["10.0.0.5"])
        #expect(NetworkInterface.check([lo, eth]).findings.isEmpty)
        var off = eth
        off.multicast = false
        #expect(NetworkInterface.check([lo, off]).findings.map(\.fix) == ["sudo ip link set eth0 multicast on"])
        #expect(NetworkInterface.check([lo]).findings.map(\.code) == [.noMulticastInterface])
        var unplugged = eth
        unplugged.carrier = false
        let check = NetworkInterface.check([lo, unplugged])
        #expect(check.findings.map(\.code) == [.noMulticastInterface])
        #expect(check.findings.first?.message.hasPrefix("eth0 has no carrier") == true)
    }

    @Test func peerOutcomesBecomeFindingsOrAnOkLine() {
        #expect(PeerObservation.answered(name: "alice", fingerprint: "3f2a").check(address: "10.0.0.1:7000", port: 7000).findings.isEmpty)
        let unreachable = PeerObservation.unreachable("refused.").check(address: "10.0.0.1:7000", port: 7000)
        #expect(unreachable.findings.map(\.code) == [.peerUnreachable])
        #expect(unreachable.findings.first?.fix == "sudo peermesh doctor --port 7000")
        #expect(PeerObservation.notFound("no such host").check(address: "box.lan:1", port: 1).findings.map(\.code) == [.peerNotFound])
        #expect(PeerObservation.handshakeFailed("x").check(address: "a:1", port: 1).findings.map(\.code) == [.peerHandshakeFailed])
    }

    @Test func codesAreStableWords() {
        for code in DoctorFinding.Code.allCases {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "-" }, "\(code.rawValue)")
        }
        #expect(DoctorFinding.Code.firewallDropsMDNS.rawValue == "firewall-drops-mdns")
    }
}
