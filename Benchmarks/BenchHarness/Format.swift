import Foundation

/// How the table writes a value (the units the bash harness printed, to the digit).
enum Unit {
    /// bits per second → `4.38 Gbit/s`
    case gigabits
    /// messages per second → `20 k msg/s` from 10,000 up, else `9,500 msg/s`
    case messages
    /// microseconds → `197.9 µs`, from 1,000 `1.20 ms`
    case microseconds
    /// milliseconds → `2.0 ms`, from 1,000 `1.03 s`
    case milliseconds
    /// KiB → MiB with one decimal, no unit
    case mebibytes
    /// bytes → `4,648 B`
    case bytes
}

/// `value` written in `unit`.
func format(_ value: Double, _ unit: Unit) -> String {
    switch unit {
    case .gigabits: fixed(value / 1e9, 2) + " Gbit/s"
    case .messages: value >= 1e4 ? grouped(value / 1e3) + " k msg/s" : grouped(value) + " msg/s"
    case .microseconds: value < 1000 ? fixed(value, 1) + " µs" : fixed(value / 1000, 2) + " ms"
    case .milliseconds: value < 1000 ? fixed(value, 1) + " ms" : fixed(value / 1000, 2) + " s"
    case .mebibytes: fixed(value / 1024, 1)
    case .bytes: grouped(value) + " B"
    }
}

/// `value` with `decimals` digits after the point, rounded as printf rounds.
func fixed(_ value: Double, _ decimals: Int) -> String {
    String(format: "%.\(decimals)f", value)
}

/// `value` rounded to a whole number with a comma between thousands (`1,143`).
func grouped(_ value: Double) -> String {
    var digits = fixed(value, 0)
    let sign = digits.hasPrefix("-") ? "-" : ""
    if !sign.isEmpty { digits.removeFirst() }
    var out = ""
    for (index, character) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
        out.append(character)
    }
    return sign + out
}
