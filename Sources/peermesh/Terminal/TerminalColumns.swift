import PeerMeshRoom

/// How many terminal columns text takes, and text cut to a number of columns.
///
/// The status line must never be wider than the terminal: a line that wraps scrolls the screen and breaks the
/// redraw in place. File names may hold wide characters (東京, emoji), so counting characters is not enough. Pure (no
/// `wcwidth`, whose answer depends on the process's locale); when unsure it counts a character as wide, which errs
/// on the side of a line that fits.
enum TerminalColumns {
    /// The columns `character` takes: 0 for marks and invisible formatting, 2 for wide and emoji, else 1.
    static func width(of character: Character) -> Int {
        var total = 0
        for scalar in character.unicodeScalars {
            let properties = scalar.properties
            if properties.isEmojiPresentation || isWide(scalar.value) { return 2 }
            switch properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .format: continue
            default: total += 1
            }
        }
        return min(total, 2)
    }

    /// The columns `text` takes.
    static func width(of text: String) -> Int { text.reduce(0) { $0 + width(of: $1) } }

    /// `text` cut to at most `columns` columns, ending with `…` when something was cut.
    static func truncate(_ text: String, to columns: Int) -> String {
        guard width(of: text) > columns else { return text }
        guard columns > 0 else { return "" }
        var kept = ""
        var used = 0
        for character in text {
            let next = width(of: character)
            if used + next > columns - 1 { break }
            kept.append(character)
            used += next
        }
        return kept + "…"
    }

    /// East Asian Wide and Fullwidth blocks (Unicode's East_Asian_Width W and F, by block).
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            true
        default:
            false
        }
    }
}
