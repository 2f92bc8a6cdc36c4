// test_sampler.cpp - the sampler against a brute-force re-implementation of its documented
// steps (lib/sampler/sampler.h), exact candidate sets and their order, greedy ties, the
// repetition penalty, distributions of 10^5 draws, and determinism of gpt_generate.
#include "gpt.h"

#include "backend/backend.h"
#include "fixture.h"
#include "reference.h"
#include "sampler/rng.h"
#include "sampler/sampler.h"
#include "runtime/token_adjust.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

// The sampler under test with its scratch, poisoned before each call.
struct Sampler {
    std::vector<float> values;
    std::vector<int32_t> index;
    explicit Sampler(size_t vocab) : values(vocab), index(vocab) {}
    // Per-token adjustments (sampler.h step 2), as (token, delta) lists.
    std::vector<int32_t> adjust_tokens;
    std::vector<float> adjust_deltas;
    int32_t operator()(const std::vector<float> &logits, const gpt::SampleSpec &spec, float u,
                       const std::vector<int32_t> &recent = {}) {
        std::fill(values.begin(), values.end(), std::nanf(""));
        std::fill(index.begin(), index.end(), -7);
        gpt::SamplerScratch s;
        s.values = values.data();
        s.index = index.data();
        gpt::SampleRow row;
        row.uniform = u;
        row.recent = recent.data();
        row.n_recent = (uint32_t)recent.size();
        row.adjust_tokens = adjust_tokens.data();
        row.adjust_deltas = adjust_deltas.data();
        row.n_adjust = (uint32_t)adjust_tokens.size();
        return gpt::sample_row(logits.data(), (uint32_t)logits.size(), spec, row, s);
    }
};

// ------------------------------------------------------------------- brute force

// The kept tokens in sampling order with their renormalised probabilities; greedy: one
// token with probability 1.
struct Candidates {
    std::vector<int32_t> ids;
    std::vector<double> probs;
    bool ambiguous = false; // a cut lies too close to a threshold to call (the case is redrawn)
};

std::vector<double> penalised(const std::vector<float> &logits, float penalty, const std::vector<int32_t> &recent) {
    std::vector<double> v(logits.begin(), logits.end());
    std::set<int32_t> seen;
    for (int32_t t : recent) {
        if (t < 0 || (size_t)t >= v.size() || !seen.insert(t).second) continue; // each distinct token once
        v[t] = v[t] > 0 ? v[t] / penalty : v[t] * penalty;
    }
    return v;
}

Candidates brute_force(const std::vector<float> &logits, const gpt::SampleSpec &s, const std::vector<int32_t> &recent) {
    Candidates c;
    const size_t V = logits.size();
    std::vector<double> v = penalised(logits, s.repetition_penalty, recent);
    if (s.temperature <= 0) {
        size_t best = 0;
        for (size_t i = 0; i < V; i++)
            if (v[i] > v[best]) best = i; // first (lowest id) of equal maxima
        c.ids = {(int32_t)best};
        c.probs = {1.0};
        return c;
    }
    for (auto &x : v) x /= s.temperature;
    std::vector<int32_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
    const size_t k = s.top_k > 0 && s.top_k < V ? s.top_k : V;
    order.resize(k);
    std::vector<double> p(k);
    double sum = 0;
    for (size_t i = 0; i < k; i++) sum += p[i] = std::exp(v[order[i]] - v[order[0]]);
    for (auto &x : p) x /= sum;
    size_t n = k;
    if (s.top_p < 1) {
        double cum = 0;
        for (size_t i = 0; i < k; i++) {
            cum += p[i];
            if (std::fabs(cum - s.top_p) < 1e-5) c.ambiguous = true;
            if (cum >= s.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (s.min_p > 0) {
        const double floor = s.min_p * p[0];
        size_t m = 1;
        for (size_t i = 1; i < n; i++) {
            if (std::fabs(p[i] - floor) < 1e-6 * p[0]) c.ambiguous = true;
        }
        while (m < n && p[m] >= floor) m++;
        n = m;
    }
    double total = 0;
    for (size_t i = 0; i < n; i++) total += p[i];
    for (size_t i = 0; i < n; i++) {
        c.ids.push_back(order[i]);
        c.probs.push_back(p[i] / total);
    }
    return c;
}

std::string spec_str(const gpt::SampleSpec &s, size_t n_recent) {
    char b[200];
    std::snprintf(b, sizeof b, "T=%g top_k=%u top_p=%g min_p=%g penalty=%g recent=%zu", (double)s.temperature, s.top_k,
                  (double)s.top_p, (double)s.min_p, (double)s.repetition_penalty, n_recent);
    return b;
}

// Every kept token is drawn for a uniform in the middle of its interval, in order; the
// ends of [0, 1) give the first and the last kept token.
void check_against_brute_force(Sampler &sampler, const std::vector<float> &logits, const gpt::SampleSpec &s,
                               const std::vector<int32_t> &recent, const Candidates &c) {
    double cum = 0;
    for (size_t i = 0; i < c.ids.size(); i++) {
        const double p = c.probs[i];
        if (p > 1e-5) {
            const float u = (float)(cum + p / 2);
            const int32_t got = sampler(logits, s, u, recent);
            if (got != c.ids[i])
                fail_msg("%s: u=%.8f gave token %d, the brute force keeps token %d (rank %zu of %zu, p=%.6g) there",
                         spec_str(s, recent.size()).c_str(), (double)u, got, c.ids[i], i, c.ids.size(), p);
        }
        cum += p;
    }
    const int32_t first = sampler(logits, s, 0.0f, recent);
    if (first != c.ids[0]) fail_msg("%s: u=0 gave %d, expected %d", spec_str(s, recent.size()).c_str(), first, c.ids[0]);
    if (c.probs.back() > 1e-5) {
        const int32_t last = sampler(logits, s, std::nextafter(1.0f, 0.0f), recent);
        if (last != c.ids.back())
            fail_msg("%s: u=1-ulp gave %d, expected the last kept token %d", spec_str(s, recent.size()).c_str(), last,
                     c.ids.back());
    }
}

std::vector<float> random_logits(std::mt19937_64 &rng, size_t V, float scale) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> l(V);
    for (auto &x : l) x = nd(rng);
    return l;
}

// ------------------------------------------------------------------------- tests

void test_greedy_is_argmax_lowest_id(void **) {
    std::mt19937_64 rng(reference::sub_seed("greedy_is_argmax"));
    for (int trial = 0; trial < 200; trial++) {
        const size_t V = 2 + rng() % 300;
        auto logits = random_logits(rng, V, 3.0f);
        // Several equal maxima at random places (sometimes just one).
        const float top = *std::max_element(logits.begin(), logits.end()) + 0.5f + (float)(rng() % 5);
        std::set<size_t> at;
        const size_t n_top = 1 + rng() % 4;
        while (at.size() < std::min(n_top, V)) at.insert(rng() % V);
        for (size_t i : at) logits[i] = top;
        const int32_t want = (int32_t)*at.begin();
        Sampler sampler(V);
        gpt::SampleSpec s;
        for (float t : {0.0f, -1.0f}) {
            s.temperature = t;
            s.top_k = (uint32_t)(rng() % 3); // ignored when greedy
            for (float u : {0.0f, 0.5f, 0.999f})
                if (sampler(logits, s, u) != want)
                    fail_msg("greedy (T=%g) over %zu tokens gave %d, the lowest of %zu maxima is %d", (double)t, V,
                             sampler(logits, s, u), at.size(), want);
        }
        // top_k = 1 at any temperature is the same argmax.
        s.temperature = 0.7f;
        s.top_k = 1;
        if (sampler(logits, s, 0.9f) != want) fail_msg("top_k=1 did not give the lowest-id maximum %d", want);
        // min_p = 1 keeps only the maxima: the draw picks among them, lowest id first.
        s.top_k = 0;
        s.min_p = 1.0f;
        std::vector<int32_t> tops(at.begin(), at.end());
        const size_t j = rng() % tops.size();
        const float u = (float)((j + 0.5) / tops.size());
        if (sampler(logits, s, u) != tops[j]) fail_msg("min_p=1: u=%g gave %d, expected %d", (double)u, sampler(logits, s, u), tops[j]);
    }
}

void test_semantics_match_brute_force(void **) {
    std::mt19937_64 rng(reference::sub_seed("semantics_match_brute_force"));
    const float temps[] = {0.0f, 0.25f, 0.7f, 1.0f, 1.6f, 4.0f};
    const float top_ps[] = {1.0f, 0.95f, 0.8f, 0.5f, 0.2f, 1e-6f};
    const float min_ps[] = {0.0f, 0.01f, 0.05f, 0.3f, 1.0f};
    const float penalties[] = {1.0f, 1.3f, 2.0f, 0.8f};
    int checked = 0;
    for (int trial = 0; trial < 3000 && checked < 1500; trial++) {
        const size_t V = 2 + rng() % 60;
        gpt::SampleSpec s;
        s.temperature = temps[rng() % 6];
        const uint32_t ks[] = {0, 1, 2, 3, 5, (uint32_t)V - 1, (uint32_t)V, (uint32_t)V + 3};
        s.top_k = ks[rng() % 8];
        s.top_p = top_ps[rng() % 6];
        s.min_p = min_ps[rng() % 5];
        s.repetition_penalty = penalties[rng() % 4];
        const auto logits = random_logits(rng, V, 0.5f + (float)(rng() % 4));
        std::vector<int32_t> recent(rng() % 12);
        for (auto &t : recent) t = (int32_t)(rng() % (V + 2)) - 1; // duplicates, -1 and V (ignored)
        const Candidates c = brute_force(logits, s, recent);
        if (c.ambiguous) continue;
        Sampler sampler(V);
        check_against_brute_force(sampler, logits, s, recent, c);
        checked++;
    }
    assert_true(checked >= 1000);
    std::printf("# %d random settings checked against the brute force\n", checked);
}

// Hand-made cases where each step's exact rule decides the outcome.
void test_semantics_edges(void **) {
    Sampler sampler(6);
    gpt::SampleSpec s;
    s.temperature = 1.0f;
    // Probabilities 0.4, 0.3, 0.2, 0.1 (logits are their logs), ids shuffled.
    const std::vector<float> l = {std::log(0.2f), std::log(0.4f), -100.0f, std::log(0.1f), std::log(0.3f), -100.0f};
    auto kept = [&](const gpt::SampleSpec &sp) {
        std::set<int32_t> ids;
        for (int i = 0; i < 2000; i++) ids.insert(sampler(l, sp, (i + 0.5f) / 2000.0f));
        return ids;
    };
    // top_p: the shortest prefix whose mass reaches top_p (0.4 + 0.3 = 0.7 >= 0.65).
    s.top_p = 0.65f;
    assert_true(kept(s) == (std::set<int32_t>{1, 4}));
    s.top_p = 0.75f; // needs 0.9: three tokens
    assert_true(kept(s) == (std::set<int32_t>{1, 4, 0}));
    s.top_p = 0.3f; // the first alone reaches it
    assert_true(kept(s) == (std::set<int32_t>{1}));
    // min_p relative to the best: 0.3 / 0.4 = 0.75 >= 0.7 kept, 0.2 / 0.4 = 0.5 not.
    s.top_p = 1.0f;
    s.min_p = 0.7f;
    assert_true(kept(s) == (std::set<int32_t>{1, 4}));
    s.min_p = 0.45f;
    assert_true(kept(s) == (std::set<int32_t>{1, 4, 0}));
    // top_k then top_p on the renormalised top-k: top 2 are 4/7 and 3/7; top_p 0.5 keeps one.
    s.min_p = 0.0f;
    s.top_k = 2;
    s.top_p = 0.5f;
    assert_true(kept(s) == (std::set<int32_t>{1}));
    s.top_p = 0.6f; // 4/7 = 0.571 < 0.6: both
    assert_true(kept(s) == (std::set<int32_t>{1, 4}));
    // Temperature flattens: at T = 1000 the four real tokens are nearly uniform.
    s.top_k = 0;
    s.top_p = 1.0f;
    s.temperature = 1000.0f;
    const int32_t mid = sampler(l, s, 0.5f);
    assert_true(mid == 1 || mid == 4 || mid == 0 || mid == 3 || mid == 2 || mid == 5);

    // Repetition penalty: once per distinct token however often it recurs; > 0 divided,
    // < 0 multiplied.
    gpt::SampleSpec g;
    g.temperature = 0.0f;
    g.repetition_penalty = 1.1f;
    const std::vector<float> pos = {3.0f, 0.0f, 2.5f, -5.0f};
    assert_int_equal(sampler(pos, g, 0.5f, {0, 0, 0}), 0); // 3/1.1 = 2.73 > 2.5 (twice would be 2.48)
    g.repetition_penalty = 1.3f;
    assert_int_equal(sampler(pos, g, 0.5f, {0}), 2); // 3/1.3 = 2.31 < 2.5
    const std::vector<float> neg = {-1.0f, -1.05f, -3.0f, -4.0f};
    g.repetition_penalty = 1.04f;
    assert_int_equal(sampler(neg, g, 0.5f, {0, 0}), 0); // -1.04 > -1.05 (twice would be -1.08)
    g.repetition_penalty = 1.1f;
    assert_int_equal(sampler(neg, g, 0.5f, {0}), 1); // -1.1 < -1.05
    g.repetition_penalty = 0.5f; // < 1 favours recent tokens
    assert_int_equal(sampler(neg, g, 0.5f, {3}), 0); // -4 * 0.5 = -2: still below -1
    assert_int_equal(sampler(neg, g, 0.5f, {1}), 1); // -1.05 * 0.5 = -0.525 > -1
    assert_int_equal(sampler(neg, g, 0.5f, {0, 1}), 0); // -0.5 > -0.525
    const std::vector<float> mixed = {1.0f, 1.8f, 0.0f, 0.0f};
    assert_int_equal(sampler(mixed, g, 0.5f, {0}), 0); // 1 / 0.5 = 2 > 1.8
    // Out-of-range recent ids are ignored.
    g.repetition_penalty = 100.0f;
    assert_int_equal(sampler(pos, g, 0.5f, {-1, 4, 1000}), 0);
}

// 10^5 draws with the library's own random numbers match the distribution the settings
// define (chi-square with 4 degrees of freedom; 25 is exceeded with probability 4e-5).
void test_distribution(void **) {
    const uint64_t seed = reference::sub_seed("distribution");
    std::mt19937_64 rng(seed);
    const double base[5] = {0.1, 0.2, 0.3, 0.15, 0.25};
    struct Setting {
        float temperature;
        uint32_t top_k;
        const char *what;
    } settings[] = {{1.0f, 0, "T=1"}, {2.0f, 0, "T=2"}, {0.5f, 0, "T=0.5"}, {1.0f, 3, "top_k=3"}};
    for (const auto &st : settings) {
        // A random assignment of the five probabilities to ids 0..4 of a vocabulary of 9
        // whose other tokens are impossible.
        std::vector<int> perm = {0, 1, 2, 3, 4};
        std::shuffle(perm.begin(), perm.end(), rng);
        const float shift = std::uniform_real_distribution<float>(-5, 5)(rng);
        std::vector<float> logits(9, -1e4f);
        for (int i = 0; i < 5; i++) logits[perm[i]] = (float)std::log(base[i]) + shift;
        // Expected probabilities: p^(1/T), renormalised, top_k applied.
        std::vector<double> p(5);
        for (int i = 0; i < 5; i++) p[i] = std::pow(base[i], 1.0 / st.temperature);
        if (st.top_k) {
            std::vector<double> sorted = p;
            std::sort(sorted.rbegin(), sorted.rend());
            for (auto &x : p)
                if (x < sorted[st.top_k - 1]) x = 0;
        }
        const double sum = std::accumulate(p.begin(), p.end(), 0.0);
        for (auto &x : p) x /= sum;

        gpt::SampleSpec s;
        s.temperature = st.temperature;
        s.top_k = st.top_k;
        Sampler sampler(9);
        gpt::Rng r(rng());
        const int N = 100000;
        std::vector<int> count(9, 0);
        for (int i = 0; i < N; i++) {
            const float u = r.next_float();
            assert_true(u >= 0.0f && u < 1.0f);
            count[sampler(logits, s, u)]++;
        }
        double chi2 = 0;
        int dof = -1;
        for (int i = 0; i < 5; i++) {
            const double e = p[i] * N;
            const int c = count[perm[i]];
            if (e == 0) {
                if (c) fail_msg("%s: token %d drawn %d times, expected never", st.what, perm[i], c);
                continue;
            }
            chi2 += (c - e) * (c - e) / e;
            dof++;
        }
        for (int i = 5; i < 9; i++) assert_int_equal(count[i], 0);
        // Critical values with tail probability ~4e-5 for 2 and 4 degrees of freedom.
        const double bound = dof == 4 ? 25.0 : dof == 2 ? 20.0 : 30.0;
        std::printf("# %s: chi-square %.2f with %d dof (bound %.0f)\n", st.what, chi2, dof, bound);
        if (chi2 > bound) fail_msg("%s: chi-square %.2f exceeds %.1f", st.what, chi2, bound);
    }
}

// sample_row is a pure function of its inputs: the same logits, settings, recent tokens
// and uniform give the same token whatever the scratch held before.
void test_sample_row_deterministic(void **) {
    std::mt19937_64 rng(reference::sub_seed("sample_row_deterministic"));
    for (int trial = 0; trial < 300; trial++) {
        const size_t V = 2 + rng() % 200;
        const auto logits = random_logits(rng, V, 2.0f);
        gpt::SampleSpec s;
        s.temperature = (float)(rng() % 4) * 0.5f;
        s.top_k = (uint32_t)(rng() % 8);
        s.top_p = (rng() % 2) ? 1.0f : 0.7f;
        s.min_p = (rng() % 2) ? 0.0f : 0.05f;
        s.repetition_penalty = (rng() % 2) ? 1.0f : 1.5f;
        std::vector<int32_t> recent(rng() % 10);
        for (auto &t : recent) t = (int32_t)(rng() % V);
        gpt::SampleRow row;
        row.uniform = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
        row.recent = recent.data();
        row.n_recent = (uint32_t)recent.size();
        int32_t first = -1;
        for (int rep = 0; rep < 3; rep++) {
            std::vector<float> values(V);
            std::vector<int32_t> index(V);
            for (auto &x : values) x = (float)(rng() % 1000) - 500.0f; // stale garbage
            for (auto &x : index) x = (int32_t)(rng() % (2 * V));
            gpt::SamplerScratch sc{values.data(), index.data()};
            const int32_t t = gpt::sample_row(logits.data(), (uint32_t)V, s, row, sc);
            assert_true(t >= 0 && (size_t)t < V);
            if (rep == 0) first = t;
            else if (t != first) fail_msg("sample_row gave %d, then %d for the same inputs", first, t);
        }
    }
}

// The random numbers: splitmix64, deterministic per seed, uniform in [0, 1) in steps of 2^-24.
void test_rng(void **) {
    gpt::Rng a(42), b(42), c(43);
    for (int i = 0; i < 1000; i++) {
        const float x = a.next_float();
        assert_true(x == b.next_float());
        assert_true(x >= 0.0f && x < 1.0f);
        assert_true(x * 16777216.0f == std::floor(x * 16777216.0f));
    }
    int same = 0;
    gpt::Rng a2(42);
    for (int i = 0; i < 100; i++) same += a2.next_u64() == c.next_u64();
    assert_true(same < 2);
    // splitmix64's published first output for seed 0.
    gpt::Rng z(0);
    assert_true(z.next_u64() == 0xe220a8397b1dcdafull);
}

// ------------------------------------------------- per-token adjustments (penalties, bias)

// sample_row's step 2 against the brute force run on logits adjusted here: the repetition
// penalty (in float, as the sampler) then logit[t] + delta for each listed token (ids outside
// the vocabulary ignored).
void test_adjustments_match_brute_force(void **) {
    std::mt19937_64 rng(reference::sub_seed("adjustments_match_brute_force"));
    const float temps[] = {0.0f, 0.5f, 1.0f, 2.0f};
    int checked = 0;
    for (int trial = 0; trial < 1500 && checked < 600; trial++) {
        const size_t V = 2 + rng() % 60;
        gpt::SampleSpec s;
        s.temperature = temps[rng() % 4];
        s.top_k = rng() % 2 ? 0 : 1 + (uint32_t)(rng() % V);
        s.top_p = rng() % 2 ? 1.0f : 0.8f;
        s.min_p = rng() % 2 ? 0.0f : 0.05f;
        s.repetition_penalty = rng() % 2 ? 1.0f : 1.4f;
        const auto logits = random_logits(rng, V, 1.0f + (float)(rng() % 3));
        std::vector<int32_t> recent(rng() % 6);
        for (auto &t : recent) t = (int32_t)(rng() % V);
        Sampler sampler(V);
        std::set<int32_t> used;
        const size_t n_adjust = rng() % (V + 1);
        std::uniform_real_distribution<float> delta(-6.0f, 6.0f);
        for (size_t j = 0; j < n_adjust; j++) {
            int32_t t = (int32_t)(rng() % (V + 2)) - 1; // -1 and V are skipped
            if (!used.insert(t).second) continue;     // distinct tokens, as the runtime gives
            sampler.adjust_tokens.push_back(t);
            sampler.adjust_deltas.push_back(rng() % 5 == 0 ? -100.0f : delta(rng));
        }
        std::vector<float> adjusted = logits;
        std::set<int32_t> seen;
        for (int32_t t : recent)
            if (s.repetition_penalty != 1.0f && seen.insert(t).second)
                adjusted[t] = adjusted[t] > 0 ? adjusted[t] / s.repetition_penalty : adjusted[t] * s.repetition_penalty;
        for (size_t j = 0; j < sampler.adjust_tokens.size(); j++) {
            const int32_t t = sampler.adjust_tokens[j];
            if (t >= 0 && (size_t)t < V) adjusted[t] += sampler.adjust_deltas[j];
        }
        gpt::SampleSpec plain = s;
        plain.repetition_penalty = 1.0f;
        const Candidates c = brute_force(adjusted, plain, {});
        if (c.ambiguous) continue;
        check_against_brute_force(sampler, logits, s, recent, c);
        checked++;
    }
    assert_true(checked >= 400);
    std::printf("# %d settings with adjustments checked against the brute force\n", checked);
}

// The deltas a generate call adds, computed naively: for each token biased or generated (the
// latter only when a penalty is on), sum of its biases in list order minus
// fmaf(count, frequency, presence) when it was generated.
struct NaiveAdjust {
    float frequency = 0, presence = 0;
    std::vector<std::pair<int32_t, float>> bias;
    std::vector<int32_t> generated;
    std::map<int32_t, float> deltas() const {
        std::map<int32_t, float> b;
        std::map<int32_t, uint32_t> count;
        for (const auto &e : bias) b[e.first] += e.second;
        if (frequency != 0.0f || presence != 0.0f)
            for (int32_t t : generated) count[t]++;
        std::map<int32_t, float> out;
        for (const auto &e : b) out[e.first] = e.second;
        for (const auto &e : count) {
            const float sum = b.count(e.first) ? b.at(e.first) : 0.0f;
            out[e.first] = sum - std::fma((float)e.second, frequency, presence);
        }
        return out;
    }
};

std::map<int32_t, float> as_map(const gpt::TokenAdjust &a) {
    std::map<int32_t, float> m;
    for (uint32_t j = 0; j < a.size(); j++) {
        if (m.count(a.tokens()[j])) fail_msg("token %d listed twice", a.tokens()[j]);
        m[a.tokens()[j]] = a.deltas()[j];
    }
    return m;
}

void test_token_adjust_naive(void **) {
    std::mt19937_64 rng(reference::sub_seed("token_adjust_naive"));
    const uint32_t V = 50;
    std::vector<uint8_t> mem(gpt::TokenAdjust::bytes(V));
    gpt::TokenAdjust adjust;
    adjust.attach(mem.data(), V);
    const float penalties[] = {0.0f, 0.0f, 0.5f, -0.3f, 1.7f};
    for (int call = 0; call < 300; call++) { // one object, many calls: each forgets the last
        NaiveAdjust naive;
        naive.frequency = penalties[rng() % 5];
        naive.presence = penalties[rng() % 5];
        std::vector<gpt_logit_bias> bias(rng() % 8);
        for (auto &b : bias) {
            b.token = (int32_t)(rng() % V);
            b.bias = std::uniform_real_distribution<float>(-100.0f, 100.0f)(rng);
            naive.bias.emplace_back(b.token, b.bias);
        }
        adjust.begin(naive.frequency, naive.presence, bias.data(), (uint32_t)bias.size());
        if (as_map(adjust) != naive.deltas()) fail_msg("call %d: the biases alone differ", call);
        const size_t n = rng() % 40;
        for (size_t i = 0; i < n; i++) {
            const int32_t t = (int32_t)(rng() % 12); // few distinct: counts above 1
            adjust.count(t);
            naive.generated.push_back(t);
            if (as_map(adjust) != naive.deltas())
                fail_msg("call %d after %zu tokens (f=%g p=%g): the deltas differ", call, i + 1, (double)naive.frequency,
                         (double)naive.presence);
        }
    }
}

// --------------------------------------------------------------- through gpt_generate

struct GenModel {
    fixture::Model fx;
    gpt_model *model = nullptr;
};
GenModel *g_gen;

int setup_gen(void **) {
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    s.n_layers = 2, s.d_model = 32, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 8, s.d_ff = 48, s.vocab_size = 67;
    s.context_length = 128;
    s.seed = reference::sub_seed("sampler model");
    s.scale = 0.15f; // flatter logits: many tokens plausible at T = 1
    g_gen = new GenModel{fixture::make(s), nullptr};
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    if (gpt_model_load_from_memory(g_gen->fx.file.data(), g_gen->fx.file.size(), &mp, &g_gen->model) != GPT_OK) {
        std::printf("load failed: %s\n", gpt_last_error());
        return -1;
    }
    return 0;
}
int teardown_gen(void **) {
    gpt_model_free(g_gen->model);
    delete g_gen;
    return 0;
}

gpt_ctx *new_ctx() {
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.n_threads = 2;
    gpt_ctx *ctx = nullptr;
    assert_int_equal(gpt_ctx_create(g_gen->model, &cp, &ctx), GPT_OK);
    return ctx;
}

std::vector<int32_t> generate(gpt_ctx *ctx, const std::vector<int32_t> &prompt, const gpt_sampling_params &sp, uint32_t cap) {
    std::vector<int32_t> out(cap, -1);
    uint32_t n = 0;
    const gpt_status st = gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, nullptr, nullptr, out.data(), cap, &n);
    if (st != GPT_OK) fail_msg("gpt_generate: %s: %s", gpt_status_str(st), gpt_ctx_last_error(ctx));
    out.resize(n);
    return out;
}

gpt_sampling_params broad(uint64_t seed) {
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 1.5f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    sp.seed = seed;
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    return sp;
}

void test_generate_deterministic(void **) {
    std::mt19937_64 rng(reference::sub_seed("generate_deterministic"));
    const std::vector<int32_t> prompt = {(int32_t)(rng() % 67), (int32_t)(rng() % 67), (int32_t)(rng() % 67)};
    const uint32_t cap = 24;
    std::vector<std::vector<int32_t>> runs;
    for (int i = 0; i < 4; i++) {
        const uint64_t seed = rng();
        gpt_ctx *a = new_ctx(), *b = new_ctx();
        const auto x = generate(a, prompt, broad(seed), cap);
        const auto y = generate(b, prompt, broad(seed), cap);
        assert_int_equal(x.size(), cap);
        assert_true(x == y); // two contexts
        gpt_ctx_reset(a);
        assert_true(generate(a, prompt, broad(seed), cap) == x); // the same context again
        // The default settings (top_k 40, top_p 0.95, min_p 0.05, T 0.8) too.
        gpt_sampling_params d;
        gpt_sampling_params_init(&d);
        d.seed = seed;
        d.flags = GPT_SAMPLING_IGNORE_EOS;
        gpt_ctx_reset(a);
        gpt_ctx_reset(b);
        assert_true(generate(a, prompt, d, cap) == generate(b, prompt, d, cap));
        gpt_ctx_free(a);
        gpt_ctx_free(b);
        runs.push_back(x);
    }
    // Different seeds give different texts (24 tokens at T = 1.5 over 67 tokens).
    for (size_t i = 0; i < runs.size(); i++)
        for (size_t j = i + 1; j < runs.size(); j++)
            if (runs[i] == runs[j]) fail_msg("seeds %zu and %zu generated the same %u tokens", i, j, cap);
    // Greedy ignores the seed.
    gpt_sampling_params g = broad(1);
    g.temperature = 0.0f;
    gpt_ctx *a = new_ctx();
    const auto g1 = generate(a, prompt, g, 12);
    gpt_ctx_reset(a);
    g.seed = 99;
    assert_true(generate(a, prompt, g, 12) == g1);
    gpt_ctx_free(a);
}

// gpt_generate = one Rng(seed) draw per token, the sampler on the last logits with the
// repetition window over the cached history (prompt included), the token appended.
// Replayed here with gpt_forward, gpt::Rng and the brute force.
void test_generate_replay(void **) {
    std::mt19937_64 rng(reference::sub_seed("generate_replay"));
    const uint32_t V = 67, cap = 20;
    for (int trial = 0; trial < 6; trial++) {
        gpt_sampling_params sp = broad(rng());
        sp.temperature = trial % 3 == 0 ? 0.0f : 0.9f;
        sp.top_k = trial % 2 ? 10 : 0;
        sp.top_p = trial >= 3 ? 0.9f : 1.0f;
        sp.min_p = trial == 5 ? 0.02f : 0.0f;
        sp.repetition_penalty = trial == 1 ? 1.0f : 1.8f;
        sp.repetition_last_n = (uint32_t)(trial * 3);
        std::vector<int32_t> prompt(1 + rng() % 6);
        for (auto &t : prompt) t = (int32_t)(rng() % V);

        gpt_ctx *ctx = new_ctx();
        const auto out = generate(ctx, prompt, sp, cap);
        assert_int_equal(out.size(), cap);
        gpt_ctx_free(ctx);

        gpt_ctx *re = new_ctx();
        std::vector<float> logits(V);
        reference::poison(logits.data(), V);
        assert_int_equal(gpt_forward(re, prompt.data(), 1, (uint32_t)prompt.size(), 0, logits.data()), GPT_OK);
        std::vector<int32_t> hist = prompt;
        gpt::Rng r(sp.seed);
        gpt::SampleSpec s;
        s.temperature = sp.temperature;
        s.top_k = sp.top_k;
        s.top_p = sp.top_p;
        s.min_p = sp.min_p;
        s.repetition_penalty = sp.repetition_penalty;
        for (uint32_t i = 0; i < cap; i++) {
            const float u = r.next_float();
            const size_t w = std::min<size_t>(hist.size(), sp.repetition_last_n);
            const std::vector<int32_t> recent(hist.end() - w, hist.end());
            const Candidates c = brute_force(logits, s, recent);
            double cum = 0;
            int32_t want = c.ids.back();
            for (size_t j = 0; j < c.ids.size(); j++) {
                cum += c.probs[j];
                if (cum > u) {
                    want = c.ids[j];
                    break;
                }
            }
            if (out[i] != want && !c.ambiguous && std::fabs(cum - u) > 1e-5)
                fail_msg("trial %d token %u: generate gave %d, the replay %d (%s)", trial, i, out[i], want,
                         spec_str(s, recent.size()).c_str());
            hist.push_back(out[i]);
            reference::poison(logits.data(), V);
            assert_int_equal(gpt_forward(re, &out[i], 1, 1, 0, logits.data()), GPT_OK);
        }
        gpt_ctx_free(re);
    }
}

// gpt_generate with penalties and bias = the sampler given the naive deltas of the tokens
// generated so far (replayed with gpt_forward): the runtime's bookkeeping, not the sampler, is
// under test here. Also checks the prompt is not counted.
void test_generate_penalties_replay(void **) {
    std::mt19937_64 rng(reference::sub_seed("generate_penalties_replay"));
    const uint32_t V = 67, cap = 24;
    for (int trial = 0; trial < 8; trial++) {
        gpt_sampling_params sp = broad(rng());
        sp.temperature = trial % 2 ? 0.0f : 0.9f;
        sp.repetition_penalty = trial % 4 == 3 ? 1.5f : 1.0f;
        sp.frequency_penalty = trial % 3 == 0 ? 0.0f : 0.8f;
        sp.presence_penalty = trial % 3 == 1 ? 0.0f : 1.3f;
        NaiveAdjust naive;
        naive.frequency = sp.frequency_penalty;
        naive.presence = sp.presence_penalty;
        std::vector<gpt_logit_bias> bias(rng() % 6);
        for (auto &b : bias) {
            b.token = (int32_t)(rng() % V);
            b.bias = rng() % 3 == 0 ? -100.0f : std::uniform_real_distribution<float>(-3.0f, 8.0f)(rng);
            naive.bias.emplace_back(b.token, b.bias);
        }
        sp.logit_bias = bias.data();
        sp.n_logit_bias = (uint32_t)bias.size();
        std::vector<int32_t> prompt(1 + rng() % 6);
        for (auto &t : prompt) t = (int32_t)(rng() % V);

        gpt_ctx *ctx = new_ctx();
        const auto out = generate(ctx, prompt, sp, cap);
        assert_int_equal(out.size(), cap);
        gpt_ctx_free(ctx);

        gpt_ctx *re = new_ctx();
        std::vector<float> logits(V);
        assert_int_equal(gpt_forward(re, prompt.data(), 1, (uint32_t)prompt.size(), 0, logits.data()), GPT_OK);
        std::vector<int32_t> hist = prompt;
        gpt::Rng r(sp.seed);
        gpt::SampleSpec s;
        s.temperature = sp.temperature;
        s.top_k = sp.top_k;
        s.top_p = sp.top_p;
        s.min_p = sp.min_p;
        s.repetition_penalty = sp.repetition_penalty;
        Sampler sampler(V);
        for (uint32_t i = 0; i < cap; i++) {
            sampler.adjust_tokens.clear();
            sampler.adjust_deltas.clear();
            for (const auto &e : naive.deltas()) {
                sampler.adjust_tokens.push_back(e.first);
                sampler.adjust_deltas.push_back(e.second);
            }
            const size_t w = std::min<size_t>(hist.size(), sp.repetition_last_n);
            const int32_t want = sampler(logits, s, r.next_float(), std::vector<int32_t>(hist.end() - w, hist.end()));
            if (out[i] != want) fail_msg("trial %d token %u: generate gave %d, the replay %d", trial, i, out[i], want);
            naive.generated.push_back(want);
            hist.push_back(want);
            assert_int_equal(gpt_forward(re, &out[i], 1, 1, 0, logits.data()), GPT_OK);
        }
        gpt_ctx_free(re);
    }
    // A large negative bias bans a token even under greedy decoding; a large positive one forces it.
    gpt_sampling_params g = broad(1);
    g.temperature = 0.0f;
    gpt_ctx *ctx = new_ctx();
    const std::vector<int32_t> prompt = {5, 9};
    const auto plain = generate(ctx, prompt, g, 8);
    gpt_logit_bias ban[8];
    for (int i = 0; i < 8; i++) ban[i] = gpt_logit_bias{plain[i], -1000.0f};
    g.logit_bias = ban;
    g.n_logit_bias = 8;
    gpt_ctx_reset(ctx);
    for (int32_t t : generate(ctx, prompt, g, 8))
        for (int i = 0; i < 8; i++) assert_int_not_equal(t, plain[i]);
    gpt_logit_bias force = {42, 1000.0f};
    g.logit_bias = &force;
    g.n_logit_bias = 1;
    gpt_ctx_reset(ctx);
    for (int32_t t : generate(ctx, prompt, g, 8)) assert_int_equal(t, 42);
    // A huge presence penalty makes greedy decoding never repeat a token.
    g.n_logit_bias = 0;
    g.presence_penalty = 1000.0f;
    gpt_ctx_reset(ctx);
    const auto distinct = generate(ctx, prompt, g, 20);
    assert_int_equal(std::set<int32_t>(distinct.begin(), distinct.end()).size(), 20);
    gpt_ctx_free(ctx);
}

// ------------------------------------------------------------------- stop strings

// A model with a SentencePiece-style tokenizer: byte tokens (so random generation gives any
// bytes, incomplete UTF-8 included), multi-byte pieces (matches span token boundaries and
// start inside tokens) and </s> (a control token: no text).
GenModel *g_stop;

int setup_stop(void **) {
    gpt::TokenizerData d = fixture::spm_base();
    float score = -1;
    for (const char *p : {"\xE2\x96\x81", "a", "b", "c", "ab", "bc", "abc", "ca", "\xE2\x96\x81" "a", "\xC3\xA9", "\xC3", "\xA9" "b",
                          "User:", "\xE2\x96\x81User:", "Us", "er", ":"})
        fixture::add_token(d, p, gpt::TOKEN_NORMAL, score--);
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    s.n_layers = 1, s.d_model = 32, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 8, s.d_ff = 48;
    s.vocab_size = (uint32_t)d.tokens.size();
    s.context_length = 128;
    s.bos_id = 1, s.eos_id = 2;
    s.seed = reference::sub_seed("stop model");
    s.scale = 0.15f;
    g_stop = new GenModel{fixture::make(s, &d), nullptr};
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    if (gpt_model_load_from_memory(g_stop->fx.file.data(), g_stop->fx.file.size(), &mp, &g_stop->model) != GPT_OK) {
        std::printf("load failed: %s\n", gpt_last_error());
        return -1;
    }
    return 0;
}
int teardown_stop(void **) {
    gpt_model_free(g_stop->model);
    delete g_stop;
    return 0;
}

std::string detokenize(const std::vector<int32_t> &t, size_t n) {
    size_t len = 0;
    gpt_detokenize(g_stop->model, t.data(), (uint32_t)n, GPT_DETOKENIZE_CONTINUE, nullptr, 0, &len);
    std::string s(len + 1, '\0');
    assert_int_equal(gpt_detokenize(g_stop->model, t.data(), (uint32_t)n, GPT_DETOKENIZE_CONTINUE, s.data(), s.size(), &len), GPT_OK);
    s.resize(len);
    return s;
}

// The text a streaming detokenizer has produced after the tokens (no flush: an incomplete
// character at the end is not there yet), as gpt_generate matches against it.
std::string streamed(const std::vector<int32_t> &t) {
    gpt_detokenizer *d = nullptr;
    assert_int_equal(gpt_detokenizer_create(g_stop->model, GPT_DETOKENIZE_CONTINUE, &d), GPT_OK);
    std::string all;
    char buf[256];
    for (int32_t id : t) {
        size_t n = 0;
        assert_int_equal(gpt_detokenizer_push(d, id, buf, sizeof buf, &n), GPT_OK);
        all.append(buf, n);
    }
    gpt_detokenizer_free(d);
    return all;
}

struct Delivered {
    std::vector<int32_t> tokens;
};
int record(int32_t token, void *user) {
    static_cast<Delivered *>(user)->tokens.push_back(token);
    return 0;
}

// Against the rule in gpt.h, computed naively from the whole run without stop strings (the
// same seed samples the same tokens: held tokens are still run): the first token after which
// the streamed text holds a stop string ends generation, at the earliest match in that text; exactly the tokens whose decoded text (incomplete UTF-8
// counted) ends at or before the match's start are delivered, to on_token and out alike; the
// cache keeps the prompt and the delivered tokens but the last.
void test_stop_strings_naive(void **) {
    std::mt19937_64 rng(reference::sub_seed("stop_strings_naive"));
    const uint32_t V = g_stop->fx.config.vocab_size, cap = 48;
    int matched = 0, unmatched = 0;
    for (int trial = 0; trial < 300; trial++) {
        gpt_sampling_params sp = broad(rng());
        sp.temperature = 1.0f;
        std::vector<int32_t> prompt(1 + rng() % 4);
        for (auto &t : prompt) t = (int32_t)(rng() % V);
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.n_threads = 1;
        gpt_ctx *ctx = nullptr;
        assert_int_equal(gpt_ctx_create(g_stop->model, &cp, &ctx), GPT_OK);
        std::vector<int32_t> all(cap);
        uint32_t n_all = 0;
        assert_int_equal(gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, nullptr, nullptr, all.data(), cap, &n_all), GPT_OK);
        assert_int_equal(n_all, cap);
        const std::string text = streamed(all);
        if (text.empty()) {
            gpt_ctx_free(ctx);
            continue;
        }

        // Stop strings: pieces of the text (some altered so they may not occur), or words of
        // the tokenizer's pieces.
        std::vector<std::string> stops(1 + rng() % 3);
        for (auto &st : stops) {
            const size_t at = rng() % text.size(), len = 1 + rng() % std::min<size_t>(8, text.size() - at);
            st = text.substr(at, len);
            if (rng() % 3 == 0) st.back() = (char)('a' + rng() % 3);
            if (rng() % 5 == 0) st = "User:";
            std::replace(st.begin(), st.end(), '\0', 'b'); // C strings
        }
        std::vector<const char *> ptrs;
        for (const auto &st : stops) ptrs.push_back(st.c_str());
        // The first token after which the streamed text holds a stop string ends the run; the
        // match is the earliest one in that text.
        size_t match = std::string::npos;
        for (uint32_t k = 0; k < cap && match == std::string::npos; k++) {
            const std::string upto = streamed(std::vector<int32_t>(all.begin(), all.begin() + k + 1));
            for (const auto &st : stops) match = std::min(match, upto.find(st));
        }
        uint32_t want = cap;
        if (match != std::string::npos) {
            want = 0;
            while (want < cap && detokenize(all, want + 1).size() <= match) want++;
        }

        sp.stop_strings = ptrs.data();
        sp.n_stop_strings = (uint32_t)ptrs.size();
        gpt_ctx_reset(ctx);
        std::vector<int32_t> out(cap, -1);
        uint32_t n = 0;
        Delivered seen;
        const gpt_status st = gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, record, &seen, out.data(), cap, &n);
        if (st != GPT_OK) fail_msg("trial %d: %s: %s", trial, gpt_status_str(st), gpt_ctx_last_error(ctx));
        if (n != want)
            fail_msg("trial %d: %u tokens delivered, the rule gives %u (match at byte %zu of %zu, %zu stop strings)", trial, n,
                     want, match, text.size(), stops.size());
        out.resize(n);
        assert_true(out == std::vector<int32_t>(all.begin(), all.begin() + n));
        assert_true(seen.tokens == out);
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), prompt.size() + (n ? n - 1 : 0));
        if (match != std::string::npos) {
            const std::string shown = detokenize(out, n);
            for (const auto &s2 : stops) assert_true(shown.find(s2) == std::string::npos);
            matched++;
        } else {
            unmatched++;
        }
        gpt_ctx_free(ctx);
    }
    std::printf("# %d runs stopped by a stop string, %d ran to the cap, each as the rule says\n", matched, unmatched);
    assert_true(matched >= 100 && unmatched >= 20);
}

// A stop string never ends generation at an end-of-sequence token (matched against no text),
// and held tokens are delivered before it.
void test_stop_strings_with_cap_and_callback(void **) {
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.n_threads = 1;
    gpt_ctx *ctx = nullptr;
    assert_int_equal(gpt_ctx_create(g_stop->model, &cp, &ctx), GPT_OK);
    const std::vector<int32_t> prompt = {5, 6};
    std::vector<int32_t> all(16);
    // The last byte of the run's text plus bytes that never follow (the run ends first): the
    // tokens from that byte on are held to the end of the run, then delivered. The model is
    // drawn per run, so the seed is the first whose text ends in a byte a C string can hold
    // (byte token <0x00> gives a NUL, which would leave an empty stop string).
    gpt_sampling_params sp;
    std::string tail;
    for (uint64_t seed = 7; tail.empty(); seed++) {
        assert_true(seed < 1007);
        sp = broad(seed);
        uint32_t n_all = 0;
        gpt_ctx_reset(ctx);
        assert_int_equal(gpt_generate(ctx, prompt.data(), 2, &sp, nullptr, nullptr, all.data(), 16, &n_all), GPT_OK);
        const std::string text = streamed(all);
        if (text.empty() || text.back() == '\0') continue;
        const std::string candidate = text.substr(text.size() - 1) + "\x01\x02";
        if (text.find(candidate) == std::string::npos) tail = candidate;
    }
    const char *stops[] = {tail.c_str()};
    sp.stop_strings = stops;
    sp.n_stop_strings = 1;
    gpt_ctx_reset(ctx);
    std::vector<int32_t> out(16);
    uint32_t n = 0;
    Delivered seen;
    assert_int_equal(gpt_generate(ctx, prompt.data(), 2, &sp, record, &seen, out.data(), 16, &n), GPT_OK);
    assert_int_equal(n, 16);
    assert_true(out == all && seen.tokens == all);
    // on_token stopping at the fifth delivered token: five delivered, the cache as gpt.h says
    // (tokens held past it are dropped).
    struct StopAt {
        uint32_t n = 0;
        static int fn(int32_t, void *user) { return ++static_cast<StopAt *>(user)->n == 5; }
    } stop_at;
    gpt_ctx_reset(ctx);
    std::fill(out.begin(), out.end(), -1);
    assert_int_equal(gpt_generate(ctx, prompt.data(), 2, &sp, StopAt::fn, &stop_at, out.data(), 16, &n), GPT_OK);
    assert_int_equal(n, 5);
    assert_true(std::vector<int32_t>(out.begin(), out.begin() + 5) == std::vector<int32_t>(all.begin(), all.begin() + 5));
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 2 + 4);
    gpt_ctx_free(ctx);
}

// ------------------------------------------------- context shift, stop strings, penalties

// The naive reference for GPT_SAMPLING_CONTEXT_SHIFT with greedy decoding, penalties and logit
// bias (gpt.h's sampler steps): token i is the argmax, lowest id on ties, of the logits of the
// last W tokens of prompt + tokens so far, run through gpt_forward on a cleared context, each
// plus B(t) - fmaf(count(t), frequency, presence) over the tokens generated before it.
std::vector<int32_t> naive_shifted_run(gpt_ctx *ref, const std::vector<int32_t> &prompt, uint32_t W, uint32_t cap,
                                       const gpt_sampling_params &sp) {
    const uint32_t V = g_stop->fx.config.vocab_size;
    std::vector<float> bias(V, 0.0f), logits(V);
    for (uint32_t j = 0; j < sp.n_logit_bias; j++) bias[sp.logit_bias[j].token] += sp.logit_bias[j].bias;
    std::vector<uint32_t> count(V, 0);
    std::vector<int32_t> seq = prompt, run;
    for (uint32_t i = 0; i < cap; i++) {
        gpt_ctx_reset(ref);
        const uint32_t n = std::min<uint32_t>((uint32_t)seq.size(), W);
        assert_int_equal(gpt_forward(ref, seq.data() + seq.size() - n, 1, n, 0, logits.data()), GPT_OK);
        for (uint32_t t = 0; t < V; t++) {
            const float penalty = count[t] ? std::fma((float)count[t], sp.frequency_penalty, sp.presence_penalty) : 0.0f;
            logits[t] += bias[t] - penalty;
        }
        const int32_t tok = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
        count[tok]++;
        run.push_back(tok);
        seq.push_back(tok);
    }
    return run;
}

// Context shift with penalties and stop strings together, against the naive loop above and
// gpt.h's stop rule (as in test_stop_strings_naive): the tokens and their count, on_token,
// the cache's length (the window less the tokens not kept, taken from its end) and its
// contents (the next token's logits equal those of a fresh context given what gpt.h says
// the cache holds). Small windows, so held tokens are often re-encoded by a shift and
// sometimes more of them are held than the window holds.
void test_context_shift_with_stops_and_penalties(void **) {
    std::mt19937_64 rng(reference::sub_seed("context shift stops penalties"));
    const uint32_t V = g_stop->fx.config.vocab_size, cap = 24;
    int matched = 0, shifted_matches = 0, held_past_window = 0;
    for (int trial = 0; trial < 60; trial++) {
        const uint32_t W = 3 + (uint32_t)(rng() % 6);
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.n_threads = 1;
        cp.max_seq = W;
        gpt_ctx *ctx = nullptr, *ref = nullptr;
        assert_int_equal(gpt_ctx_create(g_stop->model, &cp, &ctx), GPT_OK);
        assert_int_equal(gpt_ctx_create(g_stop->model, &cp, &ref), GPT_OK);
        std::vector<int32_t> prompt(1 + rng() % (W + 3)); // sometimes longer than the window
        for (auto &t : prompt) t = (int32_t)(rng() % V);
        std::uniform_real_distribution<float> u(0.0f, 1.0f);
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        sp.temperature = 0.0f;
        sp.flags = GPT_SAMPLING_CONTEXT_SHIFT | GPT_SAMPLING_IGNORE_EOS;
        sp.frequency_penalty = 2.0f * u(rng) - 0.5f;
        sp.presence_penalty = 2.0f * u(rng);
        std::vector<gpt_logit_bias> bias(rng() % 4);
        for (auto &b : bias) b = {(int32_t)(rng() % V), 6.0f * u(rng) - 3.0f};
        sp.logit_bias = bias.empty() ? nullptr : bias.data();
        sp.n_logit_bias = (uint32_t)bias.size();
        const std::vector<int32_t> all = naive_shifted_run(ref, prompt, W, cap, sp);

        // No stop strings: every token, the cache the last window but the last token.
        std::vector<int32_t> out(cap, -1);
        uint32_t n = 0;
        assert_int_equal(gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, nullptr, nullptr, out.data(), cap, &n), GPT_OK);
        assert_int_equal(n, cap);
        if (out != all) fail_msg("trial %d (window %u, prompt %zu): the shifted run differs from the naive loop", trial, W, prompt.size());
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), std::min<size_t>(W, prompt.size() + cap - 1));

        const std::string text = streamed(all);
        if (text.empty()) {
            gpt_ctx_free(ctx);
            gpt_ctx_free(ref);
            continue;
        }
        std::vector<std::string> stops(1 + rng() % 2);
        for (auto &st : stops) {
            const size_t at = rng() % text.size(), len = 1 + rng() % std::min<size_t>(12, text.size() - at);
            st = text.substr(at, len);
            if (rng() % 3 == 0) st.back() = (char)('a' + rng() % 3);
            std::replace(st.begin(), st.end(), '\0', 'b');
        }
        std::vector<const char *> ptrs;
        for (const auto &st : stops) ptrs.push_back(st.c_str());
        // gpt.h's rule on the naive run: the token k after which the streamed text first holds
        // a stop string ends it; the tokens whose text ends by the match's start are delivered.
        size_t match = std::string::npos;
        uint32_t k = 0;
        for (; k < cap; k++) {
            const std::string upto = streamed(std::vector<int32_t>(all.begin(), all.begin() + k + 1));
            for (const auto &st : stops) match = std::min(match, upto.find(st));
            if (match != std::string::npos) break;
        }
        uint32_t want = cap;
        if (match != std::string::npos) {
            want = 0;
            while (want < cap && detokenize(all, want + 1).size() <= match) want++;
        } else {
            k = cap - 1;
        }

        sp.stop_strings = ptrs.data();
        sp.n_stop_strings = (uint32_t)ptrs.size();
        gpt_ctx_reset(ctx);
        std::fill(out.begin(), out.end(), -1);
        Delivered seen;
        const gpt_status st = gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, record, &seen, out.data(), cap, &n);
        if (st != GPT_OK) fail_msg("trial %d: %s: %s", trial, gpt_status_str(st), gpt_ctx_last_error(ctx));
        if (n != want) fail_msg("trial %d (window %u): %u tokens delivered, the rule gives %u", trial, W, n, want);
        out.resize(n);
        assert_true(out == std::vector<int32_t>(all.begin(), all.begin() + n));
        assert_true(seen.tokens == out);

        // The cache: of the last min(W, P + k) tokens of prompt + all[0, k), the k - kept
        // generated tokens after the kept ones (the delivered but the last) leave its end.
        const uint32_t kept = n ? n - 1 : 0, cached = std::min<uint32_t>(W, (uint32_t)prompt.size() + k), drop = k - kept;
        const uint32_t S = cached - std::min(cached, drop);
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), S);
        if (S > 0) {
            std::vector<int32_t> seq = prompt;
            seq.insert(seq.end(), all.begin(), all.begin() + kept);
            const std::vector<int32_t> window(seq.end() - S, seq.end());
            std::vector<float> want_logits(V), got(V);
            gpt_ctx_reset(ref);
            assert_int_equal(gpt_forward(ref, window.data(), 1, S, 0, want_logits.data()), GPT_OK);
            assert_int_equal(gpt_ctx_truncate(ctx, 0, S - 1), GPT_OK); // then run its last token again
            assert_int_equal(gpt_forward(ctx, &window[S - 1], 1, 1, 0, got.data()), GPT_OK);
            float scale = 0.0f, diff = 0.0f;
            for (uint32_t t = 0; t < V; t++) {
                scale = std::max(scale, std::fabs(want_logits[t]));
                diff = std::max(diff, std::fabs(want_logits[t] - got[t]));
            }
            if (diff > 1e-4f * scale) fail_msg("trial %d: the cache holds other tokens than gpt.h says (logits differ by %g)", trial, (double)diff);
        }
        if (match != std::string::npos) {
            matched++;
            if (prompt.size() + k > W) shifted_matches++;
            if (k + 1 - n > W) held_past_window++;
        }
        gpt_ctx_free(ctx);
        gpt_ctx_free(ref);
    }
    std::printf("# %d runs stopped by a stop string, %d of them after a shift, %d holding more tokens than the window\n",
                matched, shifted_matches, held_past_window);
    assert_true(matched >= 20 && shifted_matches >= 10);
}

// Invalid sampling settings are refused with a message naming the field.
const gpt_logit_bias kBadBias[] = {{-1, 0.0f}, {67, 1.0f}}; // 67: the vocabulary's size
const gpt_logit_bias kNanBias[] = {{1, 0.5f}, {2, 1.0f}, {3, NAN}};
const std::string kLongStop(GPT_MAX_STOP_STRING_BYTES + 1, 'x');
const char *const kBadStops[] = {"ok", nullptr, "", kLongStop.c_str()};
void test_sampling_params_validation(void **) {
    gpt_ctx *ctx = new_ctx();
    const int32_t prompt[2] = {1, 2};
    int32_t out[4];
    struct Case {
        const char *what;
        void (*edit)(gpt_sampling_params &);
        const char *needle;
    } cases[] = {
        {"temperature NaN", [](gpt_sampling_params &p) { p.temperature = NAN; }, "temperature"},
        {"temperature inf", [](gpt_sampling_params &p) { p.temperature = INFINITY; }, "temperature"},
        {"top_p 0", [](gpt_sampling_params &p) { p.top_p = 0.0f; }, "top_p"},
        {"top_p > 1", [](gpt_sampling_params &p) { p.top_p = 1.01f; }, "top_p"},
        {"top_p NaN", [](gpt_sampling_params &p) { p.top_p = NAN; }, "top_p"},
        {"min_p < 0", [](gpt_sampling_params &p) { p.min_p = -0.1f; }, "min_p"},
        {"min_p > 1", [](gpt_sampling_params &p) { p.min_p = 1.5f; }, "min_p"},
        {"penalty 0", [](gpt_sampling_params &p) { p.repetition_penalty = 0.0f; }, "repetition_penalty"},
        {"penalty < 0", [](gpt_sampling_params &p) { p.repetition_penalty = -1.0f; }, "repetition_penalty"},
        {"penalty NaN", [](gpt_sampling_params &p) { p.repetition_penalty = NAN; }, "repetition_penalty"},
        {"window too long", [](gpt_sampling_params &p) { p.repetition_last_n = 1u << 20; }, "repetition_last_n"},
        {"stop tokens NULL", [](gpt_sampling_params &p) { p.n_stop_tokens = 2; }, "stop_tokens"},
        {"unknown flag", [](gpt_sampling_params &p) { p.flags = 0x80; }, "flags"},
        {"frequency NaN", [](gpt_sampling_params &p) { p.frequency_penalty = NAN; }, "frequency_penalty"},
        {"frequency huge", [](gpt_sampling_params &p) { p.frequency_penalty = 2e4f; }, "frequency_penalty"},
        {"presence -inf", [](gpt_sampling_params &p) { p.presence_penalty = -INFINITY; }, "presence_penalty"},
        {"bias NULL", [](gpt_sampling_params &p) { p.n_logit_bias = 1; }, "logit_bias is NULL"},
        {"bias too many", [](gpt_sampling_params &p) { p.n_logit_bias = GPT_MAX_LOGIT_BIAS + 1; }, "n_logit_bias"},
        {"bias token -1", [](gpt_sampling_params &p) { p.logit_bias = kBadBias; p.n_logit_bias = 1; }, "logit_bias[0].token"},
        {"bias token = vocab", [](gpt_sampling_params &p) { p.logit_bias = kBadBias + 1; p.n_logit_bias = 1; }, "logit_bias[0].token"},
        {"bias NaN", [](gpt_sampling_params &p) { p.logit_bias = kNanBias; p.n_logit_bias = 3; }, "logit_bias[2].bias"},
        {"stop strings NULL", [](gpt_sampling_params &p) { p.n_stop_strings = 1; }, "stop_strings is NULL"},
        {"stop strings too many", [](gpt_sampling_params &p) { p.n_stop_strings = GPT_MAX_STOP_STRINGS + 1; }, "n_stop_strings"},
        {"stop string NULL", [](gpt_sampling_params &p) { p.stop_strings = kBadStops; p.n_stop_strings = 2; }, "stop_strings[1] is NULL"},
        {"stop string empty", [](gpt_sampling_params &p) { p.stop_strings = kBadStops + 2; p.n_stop_strings = 1; }, "stop_strings[0] is empty"},
        {"stop string long", [](gpt_sampling_params &p) { p.stop_strings = kBadStops + 3; p.n_stop_strings = 1; }, "longer than"},
    };
    for (const Case &c : cases) {
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        c.edit(sp);
        uint32_t n = 77;
        const gpt_status st = gpt_generate(ctx, prompt, 2, &sp, nullptr, nullptr, out, 4, &n);
        if (st != GPT_ERR_INVALID_ARG || !std::strstr(gpt_ctx_last_error(ctx), c.needle) ||
            !std::strstr(gpt_last_error(), c.needle))
            fail_msg("%s: %s \"%s\"", c.what, gpt_status_str(st), gpt_ctx_last_error(ctx));
        assert_int_equal(n, 0);
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), 0); // refused before the prompt ran
    }
    // Valid stop strings on a model without a tokenizer: unsupported, said so.
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.stop_strings = kBadStops;
    sp.n_stop_strings = 1;
    uint32_t n = 77;
    assert_int_equal(gpt_generate(ctx, prompt, 2, &sp, nullptr, nullptr, out, 4, &n), GPT_ERR_UNSUPPORTED);
    assert_non_null(std::strstr(gpt_ctx_last_error(ctx), "tokenizer"));
    assert_int_equal(n, 0);
    gpt_ctx_free(ctx);
}

} // namespace

// Every accepted temperature is well defined (issue: 1e-38 overflowed logits / T to infinity
// and the sampler returned junk ids). A temperature far below the logits' gaps keeps only
// the maxima: with one maximum that is the argmax for any uniform; with several equal
// maxima, one of them. The brute force (double precision) agrees at every setting.
void test_tiny_and_huge_temperatures(void **) {
    std::mt19937_64 rng(reference::sub_seed("tiny_and_huge_temperatures"));
    const float tiny[] = {1e-38f, 1.4e-45f /* the smallest denormal */, 1e-30f, 1e-20f, 1e-7f};
    for (int trial = 0; trial < 200; trial++) {
        const size_t V = 2 + rng() % 500;
        auto logits = random_logits(rng, V, 4.0f);
        std::set<size_t> at;
        const size_t n_top = 1 + rng() % 3;
        const float top = *std::max_element(logits.begin(), logits.end()) + 1.0f;
        while (at.size() < std::min(n_top, V)) at.insert(rng() % V);
        for (size_t i : at) logits[i] = top;
        Sampler sampler(V);
        gpt::SampleSpec s;
        s.top_k = rng() % 2 ? 0 : 1 + (uint32_t)(rng() % V);
        s.top_p = rng() % 2 ? 1.0f : 0.9f;
        s.min_p = rng() % 2 ? 0.0f : 0.05f;
        for (float t : tiny) {
            s.temperature = t;
            for (float u : {0.0f, 0.3f, 0.77f, std::nextafter(1.0f, 0.0f)}) {
                const int32_t got = sampler(logits, s, u);
                if (got < 0 || (size_t)got >= V || !at.count((size_t)got))
                    fail_msg("T=%g u=%g: token %d is not one of the %zu maxima (first %zu)", (double)t, (double)u, got,
                             at.size(), *at.begin());
            }
            if (at.size() == 1) assert_int_equal(sampler(logits, s, 0.5f), (int32_t)*at.begin());
        }
    }
    // A huge temperature flattens the distribution: every kept token stays reachable.
    const std::vector<float> logits = {3.0f, -2.0f, 0.5f, 1.0f};
    Sampler sampler(logits.size());
    gpt::SampleSpec s;
    s.temperature = 3e38f;
    s.top_k = 0, s.top_p = 1.0f, s.min_p = 0.0f;
    check_against_brute_force(sampler, logits, s, {}, brute_force(logits, s, {}));
}

int main(void) {
    reference::test_seed();
    const struct CMUnitTest sampler_tests[] = {
        cmocka_unit_test(test_greedy_is_argmax_lowest_id),
        cmocka_unit_test(test_semantics_match_brute_force),
        cmocka_unit_test(test_semantics_edges),
        cmocka_unit_test(test_distribution),
        cmocka_unit_test(test_sample_row_deterministic),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_adjustments_match_brute_force),
        cmocka_unit_test(test_token_adjust_naive),
    };
    const struct CMUnitTest generate_tests[] = {
        cmocka_unit_test(test_generate_deterministic),
        cmocka_unit_test(test_generate_replay),
        cmocka_unit_test(test_generate_penalties_replay),
        cmocka_unit_test(test_sampling_params_validation),
        cmocka_unit_test(test_tiny_and_huge_temperatures),
    };
    int failed = cmocka_run_group_tests_name("sampler", sampler_tests, nullptr, nullptr);
    failed += cmocka_run_group_tests_name("sampler_generate", generate_tests, setup_gen, teardown_gen);
    const struct CMUnitTest stop_tests[] = {
        cmocka_unit_test(test_stop_strings_naive),
        cmocka_unit_test(test_stop_strings_with_cap_and_callback),
        cmocka_unit_test(test_context_shift_with_stops_and_penalties),
    };
    failed += cmocka_run_group_tests_name("sampler_stop_strings", stop_tests, setup_stop, teardown_stop);
    return failed;
}
