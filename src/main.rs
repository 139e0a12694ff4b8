fn main() {
    std::process::exit(lighten::cli::main());
}
