"""The steps of kernelgen's generator where threads work together:
exchanges, copies and tree reductions in threadgroup memory across
barriers (also inside loops), SIMD and quad functions (also inside
uniform loops and branches), and atomics. A mixin of kernelgen._Gen,
whose bookkeeping (rng, let, pick, cast, blocks, ...) they use."""

from __future__ import annotations

from fuzz_types import is_float, is_int


SIMD_INT = ("simd_sum", "simd_min", "simd_max", "simd_and", "simd_or",
            "simd_xor", "simd_product", "simd_prefix_inclusive_sum",
            "simd_prefix_exclusive_sum", "quad_sum", "quad_min", "quad_max",
            "quad_prefix_exclusive_sum")
SIMD_SHUFFLE = ("simd_shuffle", "simd_shuffle_xor", "simd_shuffle_up",
                "simd_shuffle_down", "simd_broadcast", "quad_shuffle",
                "quad_shuffle_xor", "quad_broadcast")
SIMD_FLOAT = ("simd_sum", "simd_min", "simd_max", "simd_prefix_inclusive_sum",
              "quad_sum")
ATOMIC_FNS = ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_min",
              "atomic_fetch_max", "atomic_fetch_and", "atomic_fetch_or",
              "atomic_fetch_xor")


class CooperationSteps:
    """Steps through threadgroup memory, SIMD functions and atomics."""

    def threadgroup_exchange(self, tname, ttype, size):
        r = self.rng
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        tsize = self.let("u32", ["query", "threads_per_threadgroup"])
        v, tv = self.pick(lambda t: t != "b1" or ttype == "b1")
        self.emit(["store", tname, ["var", lid], ["var", self.cast(v, tv, ttype) if (is_float(tv) and is_int(ttype)) else v]])
        self.emit(["barrier"])
        k = r.randint(1, 5)
        plus = self.let("u32", ["bin", "+", ["var", lid], ["lit", k]])
        nb = self.let("u32", ["bin", "%", ["var", plus], ["var", tsize]])
        got = self.let(ttype, ["tgload", tname, ["var", nb]])
        self.emit(["barrier"])
        return got

    def threadgroup_copy(self, tname, ttype, size):
        """enigma.copy of a slice of an input buffer into threadgroup
        memory, with widths, offsets and counts that do and do not allow
        vector accesses; then each thread reads one copied element."""
        r = self.rng
        sources = [(b["name"], b["dtype"]) for b in self.inputs
                   if not (is_float(b["dtype"]) and is_int(ttype))]
        if not sources:  # float -> int would need the generator's guards
            return self.threadgroup_exchange(tname, ttype, size)
        src, _ = r.choice(sources)
        width = r.choice((1, 2, 4, 8))
        align = r.choice((1, 2, 4, 8))
        src_off = align * r.randint(0, (self.n - 1) // align)
        dst_off = align * r.randint(0, (size - 1) // align)
        count = r.randint(1, min(self.n - src_off, size - dst_off))
        if r.random() < 0.5 and count >= width:
            count -= count % width
        self.emit(["copy", src, tname, count, src_off, dst_off, width])
        self.emit(["barrier"])
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        k = self.let("u32", ["bin", "%", ["var", lid], ["lit", count]])
        at = self.let("u32", ["bin", "+", ["var", k], ["lit", dst_off]])
        got = self.let(ttype, ["tgload", tname, ["var", at]])
        self.emit(["barrier"])
        return got

    def threadgroup_reduction(self, tname, ttype, size):
        """Tree sum over the group in threadgroup memory (barriers between
        unrolled levels), read back by every thread."""
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        tsize = self.let("u32", ["query", "threads_per_threadgroup"])
        v, tv = self.pick(is_int) or self.pick()
        self.emit(["store", tname, ["var", lid], ["var", self.cast(v, tv, ttype)]])
        self.emit(["barrier"])
        stride = 1
        while stride < size:
            stride *= 2
        stride //= 2
        while stride >= 1:
            other = self.let("u32", ["bin", "+", ["var", lid], ["lit", stride]])
            in1 = self.let("b1", ["bin", "<", ["var", lid], ["lit", stride]])
            in2 = self.let("b1", ["bin", "<", ["var", other], ["var", tsize]])
            ok = self.let("b1", ["bin", "&", ["var", in1], ["var", in2]])
            self.bodies.append([])
            self.scopes.append([])
            mine = self.let(ttype, ["tgload", tname, ["var", lid]])
            theirs = self.let(ttype, ["tgload", tname, ["var", other]])
            s = self.let(ttype, ["bin", "+", ["var", mine], ["var", theirs]])
            self.emit(["store", tname, ["var", lid], ["var", s]])
            self.scopes.pop()
            self.emit(["if", ok, self.bodies.pop(), None])
            self.emit(["barrier"])
            stride //= 2
        zero = self.let("u32", ["bin", "*", ["var", lid], ["lit", 0]])
        total = self.let(ttype, ["tgload", tname, ["var", zero]])
        self.emit(["barrier"])
        return total

    def simd_step(self):
        r = self.rng
        if r.random() < 0.2 and self.visible(is_float):
            x, tx = self.pick(is_float)
            fn = r.choice(SIMD_FLOAT)
            return self.let(tx, ["call", fn, ["var", x]])
        pick = self.pick(is_int)
        if pick is None:
            return self.conversion()
        x, tx = pick
        if r.random() < 0.6:
            return self.let(tx, ["call", r.choice(SIMD_INT), ["var", x]])
        fn = r.choice(SIMD_SHUFFLE)
        if fn == "simd_shuffle" and r.random() < 0.5:
            lane, tl = self.pick(is_int)
            lane = self.cast(lane, tl, "u32")
            return self.let(tx, ["call", fn, ["var", x], ["var", lane]])
        arg = r.randrange(40) if fn.startswith("simd") else r.randrange(6)
        return self.let(tx, ["call", fn, ["var", x], ["lit", arg]])

    def accumulator(self, t):
        """A new variable of type t, to be carried by a loop or branch."""
        src, ts = self.pick(lambda u: u != "b1")
        src = self.cast(src, ts, t)
        return self.let(t, ["bin", "+", ["var", src], ["lit", 0]])

    def simd_in_loop(self):
        """SIMD functions inside a loop with uniform bounds, summed into a
        carried value (the CPU backend splits loops at simd calls)."""
        pick = self.pick(is_int)
        if pick is None:
            return self.simd_step()
        x, tx = pick
        acc = self.accumulator(tx)
        ivar = self.fresh("i")
        self.open_block([(ivar, "i32")])
        ic = self.cast(ivar, "i32", tx)
        y = self.let(tx, ["bin", "+", ["var", x], ["var", ic]])
        fn = self.rng.choice(SIMD_INT + ("simd_shuffle_down", "simd_shuffle_xor"))
        args = [["var", y]] + ([["lit", self.rng.randrange(1, 8)]]
                               if "shuffle" in fn else [])
        s = self.let(tx, ["call", fn] + args)
        self.emit(["set", acc, ["bin", "+", ["var", acc], ["var", s]]])
        body = self.close_block()
        self.emit(["for", ivar, 0, self.rng.randint(1, 4), 1, body])
        return acc

    def simd_in_uniform_branch(self):
        """SIMD functions under a condition that is the same for every lane
        of a simdgroup (it differs between simdgroups)."""
        pick = self.pick(is_int)
        if pick is None:
            return self.simd_step()
        x, tx = pick
        acc = self.accumulator(tx)
        sg = self.let("u32", ["query", "simdgroup_index_in_threadgroup"])
        c = self.let("b1", ["bin", self.rng.choice(("==", "!=", "<")), ["var", sg],
                            ["lit", self.rng.randint(0, 2)]])
        self.open_block()
        fn = self.rng.choice(SIMD_INT)
        s = self.let(tx, ["call", fn, ["var", x]])
        self.emit(["set", acc, ["var", s]])
        body = self.close_block()
        self.emit(["if", c, body, None])
        return acc

    def threadgroup_loop(self, tname, ttype):
        """Exchanges with a neighbour inside a loop: barriers in a loop body."""
        acc = self.accumulator(ttype)
        lid = self.let("u32", ["query", "thread_index_in_threadgroup"])
        tsize = self.let("u32", ["query", "threads_per_threadgroup"])
        ivar = self.fresh("i")
        self.open_block([(ivar, "i32")])
        self.emit(["store", tname, ["var", lid], ["var", acc]])
        self.emit(["barrier"])
        plus = self.let("u32", ["bin", "+", ["var", lid], ["lit", self.rng.randint(1, 3)]])
        nb = self.let("u32", ["bin", "%", ["var", plus], ["var", tsize]])
        got = self.let(ttype, ["tgload", tname, ["var", nb]])
        self.emit(["barrier"])
        self.emit(["set", acc, ["bin", self.rng.choice(("+", "^", "-")),
                                ["var", got], ["var", acc]]])
        body = self.close_block()
        self.emit(["for", ivar, 0, self.rng.randint(1, 4), 1, body])
        return acc

    def atomics(self, outs):
        r = self.rng
        nbins = r.choice((1, 2, 7, 32))
        at = r.choice(("i32", "u32"))
        name = f"hist{len(outs)}"
        outs.append({"name": name, "dtype": at, "size": nbins})
        # One commutative family per buffer: mixing, say, xor and max on
        # one element would make the result depend on the threads' order.
        family = r.choice((("atomic_fetch_add", "atomic_fetch_sub"),
                           ("atomic_fetch_min",), ("atomic_fetch_max",),
                           ("atomic_fetch_and",), ("atomic_fetch_or",),
                           ("atomic_fetch_xor",)))
        for _ in range(r.randint(1, 3)):
            fn = r.choice(family)
            k, tk = self.pick(is_int) or (self.let("u32", ["query", "thread_position_in_grid"]), "u32")
            k = self.cast(k, tk, "u32")
            idx = self.let("u32", ["bin", "%", ["var", k], ["lit", nbins]])
            v, tv = self.pick(is_int) or self.pick()
            v = self.cast(v, tv, at)
            if r.random() < 0.3 and fn in ("atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_or"):
                c = self.pick(lambda t: t == "b1")
                c = c[0] if c else self.compare()
                self.emit(["if", c, [["atomic", fn, name, ["var", idx], ["var", v]]], None])
            else:
                self.emit(["atomic", fn, name, ["var", idx], ["var", v]])
