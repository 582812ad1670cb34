import Foundation
import PeerMesh
import Testing
@testable import PeerMeshRoom
@testable import peermesh

/// The status line under a room's output: one line, narrower than the terminal whatever the width, names or count.
struct StatusLineTests {
    static func transfer(_ name: String, _ direction: TransferProgress.Direction = .sending, done: Int64, of total: Int64,
                         seconds: Int64 = 4) -> TransferProgress {
        TransferProgress(name: name, direction: direction, completed: done, total: total, bytesPerSecond: Double(done) / Double(seconds))
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

    /// A transfer that waits says what for and until when, with no speed or time left (#37 item 4).
    @Test func aWaitingTransferSaysWhatItWaitsForWithoutSpeedOrTimeLeft() {
        var waiting = Self.big
        waiting.waiting = "bob to come back, until 14:05"
        waiting.bytesPerSecond = nil
        let line = StatusLine.text(for: [waiting], width: 160) ?? ""
        #expect(line == "sending big.bin [#########...............]  40%  12.0 MiB / 30.0 MiB  waiting for bob to come back, until 14:05")
        let narrow = StatusLine.text(for: [waiting], width: 40) ?? ""
        #expect(!narrow.contains("/s") && !narrow.contains("ETA"), "\(narrow)")
        // Beside a moving one, only the moving one counts for speed and time left.
        let line2 = StatusLine.text(for: [Self.big, waiting], width: 120)
        #expect(line2 == "2 transfers · 3.0 MiB/s · ETA 0:06 | big.bin 40% | big.bin 40% waiting")
        var starting = Self.big
        starting.bytesPerSecond = nil
        #expect(StatusLine.text(for: [starting], width: 160)?.hasSuffix("12.0 MiB / 30.0 MiB  starting  ETA -:--") == true)
    }

    /// After a resume the speed counts only the bytes sent since: 20 MiB already held, 2 MiB in the second since.
    @Test func theSpeedCountsFromTheLastResume() {
        let start = ContinuousClock.now
        let baseline = TransferBaseline(bytes: 20 << 20, at: start)
        #expect(baseline.rate(22 << 20, at: start + .seconds(1)) == Double(2 << 20))
        #expect(baseline.rate(20 << 20, at: start) == 0)
    }

    /// The room's table says what a batch's line shows: waiting for an answer keeps no speed until bytes move; a
    /// member gone shows who and until when; the resume counts only what moves after it.
    @Test func theTransferTableSamplesWaitsAndResumes() throws {
        let bob = try PeerID(displayName: "bob", keyID: [UInt8](repeating: 0xb0, count: 32))
        var table = RoomTransfers()
        let number = table.add(.sending, name: "big.bin", peer: bob, total: 100 << 20)
        let progress = ResourceProgress(totalUnitCount: 100 << 20)
        table.attach(progress, to: number)
        let start = ContinuousClock.now
        table.waiting(number, for: "bob to accept", keepingSpeed: true)
        #expect(table.sample([number], at: start) == TransferSample(completed: 0, waiting: "bob to accept"))
        table.moving(number, at: start)
        progress.completedUnitCount = 10 << 20
        #expect(table.sample([number], at: start + .seconds(2)) == TransferSample(completed: 10 << 20, bytesPerSecond: Double(5 << 20)))
        table.waiting(number, for: "bob to come back, until 14:05", keepingSpeed: false)
        #expect(table.sample([number], at: start + .seconds(60)).bytesPerSecond == nil)
        #expect(table.sample([number], at: start + .seconds(60)).waiting == "bob to come back, until 14:05")
        // bob came back holding 60 MiB: the jump from 10 to 60 MiB is not speed.
        progress.completedUnitCount = 60 << 20
        table.moving(number, at: start + .seconds(100), restart: true)
        progress.completedUnitCount = 62 << 20
        #expect(table.sample([number], at: start + .seconds(101)).bytesPerSecond == Double(2 << 20))
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
