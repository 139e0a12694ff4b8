//! The `lighten` binary; everything lives in the library.

// Reading a large server allocates many small strings; mimalloc is markedly faster at
// that than the system allocator (bench/parse-plesk.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(lighten::cli::main());
}
