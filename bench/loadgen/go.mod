module evictor.local/bench/loadgen

go 1.26.0
