package blas

import "math"

// Go reference kernels. The purego build uses them directly; the default
// build runs the C kernels in kernels.c, which perform the same float32
// operations in the same order, so the two agree bit for bit (tests check
// it). Every product that feeds an addition is wrapped in float32(...): the
// Go spec lets a compiler fuse x*y+z into an FMA (it does for GOAMD64=v3),
// and an explicit conversion forbids that, as -ffp-contract=off does in C.

// Constants of the exp(-x) approximation behind sigmoid: Cephes' expf
// (range reduction by ln 2 split in two parts, degree-5 polynomial), about
// 1 ulp on the clamped range.
const (
	expLo          = -88.0 // exp(-88) ≈ 6e-39: sigmoid(88) rounds to 1 anyway
	expHi          = 87.0  // exp(87) ≈ 6e37 keeps 1+e finite: sigmoid(-87) ≈ 1.6e-38
	log2e          = 1.44269504088896341
	roundMagic     = 12582912.0 // 1.5 * 2^23: adding it rounds to an integer
	roundMagicBits = 0x4B400000 // math.Float32bits(roundMagic)
	ln2Hi          = 0.693359375
	ln2Lo          = -2.12194440e-4
	expP0          = 1.9875691500e-4
	expP1          = 1.3981999507e-3
	expP2          = 8.3334519073e-3
	expP3          = 4.1665795894e-2
	expP4          = 1.6666665459e-1
	expP5          = 5.0000001201e-1
)

// sampleChunk is how many columns the C sampling kernel draws uniforms for at
// once; it is a multiple of rngLanes, so the draws don't depend on it.
const sampleChunk = 256

// sigmoid returns 1/(1+exp(-x)) within about 1e-7 absolute for every float32
// x; NaN gives NaN.
func sigmoid(x float32) float32 {
	y := -x
	if y < expLo {
		y = expLo
	}
	if y > expHi {
		y = expHi
	}
	t := float32(y*log2e) + roundMagic
	n := t - roundMagic
	// t's low mantissa bits hold round(y*log2e) in two's complement: build
	// 2^n from them without a float-to-int conversion.
	scale := math.Float32frombits((math.Float32bits(t) - roundMagicBits + 127) << 23)
	r := y - float32(n*ln2Hi)
	r = r - float32(n*ln2Lo)
	z := r * r
	p := float32(expP0*r) + expP1
	p = float32(p*r) + expP2
	p = float32(p*r) + expP3
	p = float32(p*r) + expP4
	p = float32(p*r) + expP5
	p = float32(p*z) + r
	p = p + 1
	e := p * scale
	return 1 / (1 + e)
}

func refUniform(s *[4 * rngLanes]uint32, dst []float32) {
	var u [rngLanes]float32
	for i := 0; i < len(dst); i += rngLanes {
		uniform16(s, &u)
		copy(dst[i:], u[:])
	}
}

func refSigmoidBias(x []float32, rows, cols int, bias, colSum []float32) {
	bias = bias[:cols]
	for r := 0; r < rows; r++ {
		xr := x[r*cols : (r+1)*cols]
		if colSum != nil {
			cs := colSum[:cols]
			for j, v := range xr {
				p := sigmoid(v + bias[j])
				xr[j] = p
				cs[j] += p
			}
		} else {
			for j, v := range xr {
				xr[j] = sigmoid(v + bias[j])
			}
		}
	}
}

func refSigmoidBiasSample(x, smp []float32, rows, cols int, bias, colSum []float32, s *[4 * rngLanes]uint32) {
	var u [rngLanes]float32
	bias = bias[:cols]
	for r := 0; r < rows; r++ {
		xr := x[r*cols : (r+1)*cols]
		sr := smp[r*cols : (r+1)*cols]
		for j0 := 0; j0 < cols; j0 += rngLanes {
			uniform16(s, &u)
			n := min(rngLanes, cols-j0)
			for l := 0; l < n; l++ {
				j := j0 + l
				p := sigmoid(xr[j] + bias[j])
				xr[j] = p
				if u[l] < p {
					sr[j] = 1
				} else {
					sr[j] = 0
				}
				if colSum != nil {
					colSum[j] += p
				}
			}
		}
	}
}

func refReconstruct(x, v0 []float32, rows, cols int, bias, colDiff []float32, logistic bool) float64 {
	var sse float64
	bias = bias[:cols]
	colDiff = colDiff[:cols]
	for r := 0; r < rows; r++ {
		xr := x[r*cols : (r+1)*cols]
		vr := v0[r*cols : (r+1)*cols]
		if logistic {
			for j, v := range xr {
				xr[j] = sigmoid(v + bias[j])
			}
		} else {
			for j, v := range xr {
				xr[j] = v + bias[j]
			}
		}
		var acc [rngLanes]float32
		for j, v := range xr {
			d := vr[j] - v
			colDiff[j] += d
			acc[j%rngLanes] += float32(d * d)
		}
		var rs float64
		for _, a := range acc {
			rs += float64(a)
		}
		sse += rs
	}
	return sse
}

func refMomentumStep(w, vel []float32, decay, carry float32) bool {
	vel = vel[:len(w)]
	bad := uint32(0)
	for i, wi := range w {
		v := vel[i] - float32(decay*wi)
		nw := wi + v
		vel[i] = float32(carry * v)
		w[i] = nw
		if math.Float32bits(nw)&0x7f800000 == 0x7f800000 {
			bad = 1
		}
	}
	return bad == 0
}

func refSigmoidDelta(delta, h []float32, rows, cols int, colSum []float32) {
	for r := 0; r < rows; r++ {
		dr := delta[r*cols : (r+1)*cols]
		hr := h[r*cols : (r+1)*cols]
		for j, d := range dr {
			v := d * (hr[j] * (1 - hr[j]))
			dr[j] = v
			if colSum != nil {
				colSum[j] += v
			}
		}
	}
}
