import Testing
@testable import peermesh

/// The status line under a room's output: one line, narrower than the terminal whatever the width, names or count.
struct StatusLineTests {
    static func transfer(_ name: String, _ direction: TransferProgress.Direction = .sending, done: Int64, of total: Int64,
                         seconds: Int64 = 4) -> TransferProgress {
        TransferProgress(name: name, direction: direction, completed: done, total: total, elapsed: .seconds(seconds))
    }

    static let big = transfer("big.bin", done: 12 << 20, of: 30 << 20)

    @Test func oneTransferOnAWideTerminalIsTheWholeBar() {
        let line = StatusLine.text(for: [Self.big], width: 160)
        #expect(line == "sending big.bin [#########...............]  40%  12.0 MiB / 30.0 MiB  3.0 MiB/s  ETA 0:06")
    }

    @Test func neverReachesTheLastColumnAtAnyWidth() {
        let names = ["big.bin", "a-rather-long-file-name-that-goes-on-and-on-for-the-status-line.tar.gz", "東京の写真アルバム🎉.zip"]
        for width in 1...200 {
            for name in names {
                let one = StatusLine.text(for: [Self.transfer(name, .receiving, done: 5, of: 7)], width: width) ?? ""
                #expect(TerminalColumns.width(of: one) <= max(width - 1, 1), "\(width): \(one)")
                #expect(!one.contains("\n"))
                let several = StatusLine.text(for: names.map { Self.transfer($0, done: 1, of: 3) }, width: width) ?? ""
                #expect(TerminalColumns.width(of: several) <= max(width - 1, 1), "\(width): \(several)")
            }
        }
    }

    @Test func aNarrowTerminalKeepsThePercentageAndTimeLeft() {
        let long = Self.transfer("a-rather-long-file-name-for-the-status-line.bin", done: 1, of: 4)
        // The bar shortens first; a long name then goes without bar and sizes.
        #expect(StatusLine.text(for: [Self.big], width: 80) == "sending big.bin [#####.........]  40%  12.0 MiB / 30.0 MiB  3.0 MiB/s  ETA 0:06")
        #expect(StatusLine.text(for: [long], width: 80) == "sending a-rather-long-file-name-for-the-status-line.bin  25%  0 B/s  ETA 0:12")
        let at40 = StatusLine.text(for: [long], width: 40) ?? ""
        #expect(at40.hasPrefix("sending a-rather") && at40.contains("…") && at40.hasSuffix(" 25%  ETA 0:12"), "\(at40)")
    }

    @Test func severalTransfersAreSummarised() {
        let notes = Self.transfer("notes.txt", .receiving, done: 8 << 10, of: 10 << 10)
        let line = StatusLine.text(for: [Self.big, notes], width: 120)
        #expect(line == "2 transfers · 3.0 MiB/s · ETA 0:06 | big.bin 40% | notes.txt 80%")
    }

    @Test func thoseThatDoNotFitAreCounted() {
        let many = (1...9).map { Self.transfer("file-\($0).bin", done: Int64($0), of: 10) }
        let line = StatusLine.text(for: many, width: 80) ?? ""
        #expect(line.hasPrefix("9 transfers · ") && line.contains("| file-1.bin 10%"), "\(line)")
        #expect(line.hasSuffix(" more"), "\(line)")
        let shown = line.components(separatedBy: " | ").dropFirst().filter { !$0.hasSuffix("more") }.count
        #expect(line.hasSuffix("| +\(9 - shown) more"), "\(line)")
    }

    @Test func nothingUnderWayIsNoLine() {
        #expect(StatusLine.text(for: [], width: 80) == nil)
    }

    @Test func columnsCountWideCharactersTwice() {
        #expect(TerminalColumns.width(of: "abc") == 3)
        #expect(TerminalColumns.width(of: "東京") == 4)
        #expect(TerminalColumns.width(of: "🎉") == 2)
        #expect(TerminalColumns.width(of: "e\u{301}") == 1)
        #expect(TerminalColumns.truncate("東京の写真", to: 5) == "東京…")
        #expect(TerminalColumns.truncate("short", to: 5) == "short")
    }

    @Test func timesLeftReadAsAClock() {
        #expect(ProgressBar.clock(7) == "0:07")
        #expect(ProgressBar.clock(754) == "12:34")
        #expect(ProgressBar.clock(3723) == "1:02:03")
    }
}
