//! The progress bar every long command shows on standard error, when it is a terminal.

use std::io::IsTerminal;

/// A bar of `len` steps drawn with `template` (indicatif's), or `None` when `show` is
/// false or standard error is not a terminal.
pub fn bar(show: bool, len: u64, template: &str) -> Option<indicatif::ProgressBar> {
    if !show || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(Some(len), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}
