package human

import "testing"

func TestDuration(t *testing.T) {
	tests := []struct {
		ns   int64
		want string
	}{
		{0, "0s"}, {999, "999ns"}, {1234, "1.23µs"}, {12_345_678, "12.3ms"}, {162_400_000, "162ms"},
		{1_375_000_000, "1.38s"}, {4_000_000_000_000, "1h6m40s"},
	}
	for _, tc := range tests {
		if got := Duration(tc.ns); got != tc.want {
			t.Errorf("Duration(%d) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"}, {950, "950"}, {999.4, "999"}, {1234, "1.23k"}, {18_150, "18.1k"}, {83_000, "83.0k"}, {101_000, "101k"},
		{2_400_000, "2.40M"}, {12_560_000, "12.6M"}, {150e6, "150M"},
	}
	for _, tc := range tests {
		if got := Rate(tc.v); got != tc.want {
			t.Errorf("Rate(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1000, "1000 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {4096, "4 KiB"}, {1536, "1.50 KiB"},
		{65536, "64 KiB"}, {1 << 20, "1 MiB"}, {64 << 20, "64 MiB"}, {100<<20 + 1, "100 MiB"}, {15<<20 + 1, "15.0 MiB"},
		{1 << 40, "1 TiB"}, {-4096, "-4 KiB"}, {1<<63 - 1, "8.00 EiB"},
	}
	for _, tc := range tests {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
