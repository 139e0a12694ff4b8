//! Parallel map over a slice with scoped threads, results in input order.
//!
//! Reading a server of a thousand accounts is mostly independent per-file work (parsing,
//! modelling a .htaccess); this spreads it over the cores while keeping output
//! deterministic.  Small inputs stay on the calling thread.

/// `f(index, item)` for every item, on up to `available_parallelism()` threads.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    if workers == 1 || items.len() < 8 {
        return items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    }
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                s.spawn(move || {
                    (w..items.len()).step_by(workers).map(|k| (k, f(k, &items[k]))).collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (k, r) in h.join().expect("a worker thread panicked") {
                slots[k] = Some(r);
            }
        }
    });
    slots.into_iter().map(|r| r.expect("every item mapped")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order() {
        let v: Vec<usize> = (0..100).collect();
        assert_eq!(
            super::map(&v, |i, x| i * 1000 + x * 2),
            (0..100).map(|i| i * 1000 + i * 2).collect::<Vec<_>>()
        );
    }
}
