/// Numbers as the room prints them (`05`, ` 45`, `12.3`, `30`): what `String(format:)` gave, which is Foundation's
/// and not in FoundationEssentials.
package enum NumberText {
    /// `value` right-aligned in `width` columns, filled with `fill` (`padded(5, width: 2, fill: "0")` is `05`).
    package static func padded(_ value: Int, width: Int, fill: Character = " ") -> String {
        let digits = String(value)
        return String(repeating: fill, count: max(0, width - digits.count)) + digits
    }

    /// `value` with one decimal, rounded half away from zero (`12.34` is `12.3`).
    package static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return (tenths < 0 ? "-" : "") + "\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    /// `value` without a trailing `.0` (`30`, `0.5`), as `%g` shows a number of seconds.
    package static func short(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// `512 B`, `12.3 MiB`: powers of 1024, one decimal.
    package static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : NumberText.oneDecimal(value) + " " + units[unit]
    }
}
