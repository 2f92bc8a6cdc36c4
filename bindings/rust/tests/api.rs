//! Tests of the safe API against the shared library on the CPU.
//!
//! The model: GPT_TEST_MODEL (meson's test sets it to a fixture written by libgpt.fixture);
//! else a fixture written now with `python3 -m libgpt.fixture` from ../python; else the
//! tests skip with a message. GPT_TEST_LAYOUT (bindings/python/tests/layout.c, built by
//! meson) enables the field-offset check.
use libgpt::{status, sys, CtxParams, Device, Model, ModelParams, SamplingParams};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

fn model_path() -> Option<PathBuf> {
    static PATH: Mutex<Option<Option<PathBuf>>> = Mutex::new(None);
    let mut guard = PATH.lock().unwrap_or_else(|e| e.into_inner());
    guard
        .get_or_insert_with(|| {
            if let Some(p) = std::env::var_os("GPT_TEST_MODEL") {
                return Some(PathBuf::from(p));
            }
            let out = std::env::temp_dir().join(format!("libgpt-rust-test-{}.gpt", std::process::id()));
            let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../python");
            let ok = Command::new("python3")
                .args(["-m", "libgpt.fixture"])
                .arg(&out)
                .env("PYTHONPATH", &python)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                Some(out)
            } else {
                eprintln!("SKIP: no GPT_TEST_MODEL and `python3 -m libgpt.fixture` failed");
                None
            }
        })
        .clone()
}

macro_rules! model_or_skip {
    () => {
        match model_path() {
            Some(p) => Model::load_with(&p, &ModelParams::new().device(Device::Cpu)).expect("load the test model"),
            None => return,
        }
    };
}

#[test]
fn version_and_params() {
    assert!(!libgpt::version().is_empty());
    assert_eq!(libgpt::version_number() / 10000, libgpt::sys::GPT_VERSION_MAJOR);
    assert!(libgpt::build_info().contains("cpu"));
    // The *_init functions set struct_size to the C sizeof: the Rust mirrors have that size.
    let mp = ModelParams::new();
    assert_eq!(
        mp.raw.struct_size as usize,
        std::mem::size_of::<libgpt::sys::gpt_model_params>()
    );
    assert_eq!(mp.raw.device, libgpt::sys::GPT_DEVICE_AUTO);
    let cp = CtxParams::new();
    assert_eq!(
        cp.raw.struct_size as usize,
        std::mem::size_of::<libgpt::sys::gpt_ctx_params>()
    );
    assert_eq!(cp.raw.max_batch, 1);
    let sp = SamplingParams::new().as_raw();
    assert_eq!(
        sp.struct_size as usize,
        std::mem::size_of::<libgpt::sys::gpt_sampling_params>()
    );
    assert_eq!(sp.top_k, 40);
}

#[test]
fn device_info_of_the_host() {
    let cpu = libgpt::device_info(libgpt::Device::Cpu).expect("cpu info");
    assert_eq!(cpu.device(), libgpt::Device::Cpu);
    assert_eq!(cpu.name(), "cpu");
    assert!(!cpu.integrated());
    assert!(cpu.available_bytes() <= cpu.total_bytes());
    // MemTotal read here, independently of the library.
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        let kb: u64 = text
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .expect("MemTotal");
        assert_eq!(cpu.total_bytes(), kb * 1024);
    }
    let n = libgpt::cuda_device_count() as u32;
    let e = libgpt::device_info(libgpt::Device::Cuda(n)).unwrap_err();
    assert_eq!(e.status, libgpt::sys::GPT_ERR_UNSUPPORTED);
}

#[test]
fn weights_placement_flags() {
    // host_weights and device_weights exclude each other; false clears the flag.
    let p = ModelParams::new().host_weights(true);
    assert_eq!(p.raw.flags & (sys::GPT_MODEL_HOST_WEIGHTS | sys::GPT_MODEL_DEVICE_WEIGHTS), sys::GPT_MODEL_HOST_WEIGHTS);
    let p = p.device_weights(true);
    assert_eq!(p.raw.flags & (sys::GPT_MODEL_HOST_WEIGHTS | sys::GPT_MODEL_DEVICE_WEIGHTS), sys::GPT_MODEL_DEVICE_WEIGHTS);
    let p = p.device_weights(false);
    assert_eq!(p.raw.flags & (sys::GPT_MODEL_HOST_WEIGHTS | sys::GPT_MODEL_DEVICE_WEIGHTS), 0);
    // On the CPU the weights are in host memory anyway: it loads, and no GPU reads them in place.
    if let Some(path) = model_path() {
        let m = Model::load_with(&path, &ModelParams::new().device(Device::Cpu).host_weights(true)).expect("load");
        assert!(!m.info().host_weights());
    }
}

#[test]
fn struct_layout_matches_c() {
    use libgpt::sys::*;
    use std::ptr::addr_of;
    let exe = match std::env::var_os("GPT_TEST_LAYOUT") {
        Some(e) => e,
        None => {
            eprintln!("SKIP: GPT_TEST_LAYOUT not set");
            return;
        }
    };
    let out = Command::new(exe).output().expect("run the layout program");
    let text = String::from_utf8(out.stdout).unwrap();
    let c: std::collections::HashMap<String, usize> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect();
    macro_rules! layout {
        ($ty:ident { $($f:ident),* }) => {{
            assert_eq!(std::mem::size_of::<$ty>(), c[stringify!($ty)], "sizeof {}", stringify!($ty));
            let v = std::mem::MaybeUninit::<$ty>::uninit();
            let base = v.as_ptr() as usize;
            let mut n = 0;
            $(
                let off = unsafe { addr_of!((*v.as_ptr()).$f) } as usize - base;
                assert_eq!(off, c[concat!(stringify!($ty), ".", stringify!($f))], "{}.{}", stringify!($ty), stringify!($f));
                n += 1;
            )*
            let c_fields = c.keys().filter(|k| k.starts_with(concat!(stringify!($ty), "."))).count();
            assert_eq!(n, c_fields, "{}: field count", stringify!($ty));
        }};
    }
    layout!(gpt_model_params {
        struct_size,
        device,
        weight_dtype,
        flags
    });
    layout!(gpt_model_info {
        struct_size,
        arch,
        n_layers,
        d_model,
        n_heads,
        n_kv_heads,
        head_dim,
        d_ff,
        vocab_size,
        context_length,
        file_dtype,
        weight_dtype,
        device,
        bos_token,
        eos_token,
        flags,
        norm_eps,
        rope_theta,
        n_params,
        host_bytes,
        device_bytes,
        name,
        n_experts,
        n_experts_used,
        d_ff_expert,
        d_ff_shared,
        n_active_params
    });
    layout!(gpt_ctx_params {
        struct_size,
        max_batch,
        max_seq,
        max_step_tokens,
        compute_dtype,
        kv_dtype,
        n_threads,
        flags,
        abort_fn,
        abort_user
    });
    layout!(gpt_sampling_params {
        struct_size,
        temperature,
        top_k,
        top_p,
        min_p,
        repetition_penalty,
        repetition_last_n,
        flags,
        seed,
        stop_tokens,
        n_stop_tokens,
        reserved,
        stop_strings,
        n_stop_strings,
        frequency_penalty,
        presence_penalty,
        n_logit_bias,
        logit_bias
    });
    layout!(gpt_logit_bias { token, bias });
    layout!(gpt_device_info {
        struct_size,
        device,
        integrated,
        pageable_access,
        host_mapped,
        cc_major,
        cc_minor,
        multiprocessors,
        total_bytes,
        available_bytes,
        name
    });
    layout!(gpt_chat_message { role, content });
}

#[test]
fn model_info_and_tokenizer() {
    let model = model_or_skip!();
    let info = model.info();
    assert!(info.vocab_size() > 0);
    assert!(info.has_tokenizer());
    assert_eq!(info.device(), Device::Cpu);
    assert!(info.arch() == "llama" || info.arch() == "gpt2");
    assert_eq!(info.n_active_params(), info.n_params()); // a dense model uses every parameter
    assert_eq!(info.experts(), None);
    for text in ["the Lord and the", "h\u{e9}llo \u{2713} \u{65e5}\u{672c}", ""] {
        let ids = model.tokenize(text).unwrap();
        assert_eq!(model.detokenize(&ids).unwrap(), text);
        let mut d = model.detokenizer().unwrap();
        let mut s = String::new();
        for &t in &ids {
            s += &d.push(t).unwrap();
        }
        s += &d.flush().unwrap();
        assert_eq!(s, text);
    }
    let long = "the Lord and ".repeat(300);
    assert_eq!(model.detokenize(&model.tokenize(&long).unwrap()).unwrap(), long);
    let raw = b"\xff\xfe abc";
    assert_eq!(
        model.detokenize_bytes(&model.tokenize(raw).unwrap(), 0).unwrap(),
        raw.to_vec()
    );
    let err = model.detokenize(&[model.vocab_size() as i32]).unwrap_err();
    assert_eq!(err.status, status::INVALID_ARG);
}

#[test]
fn errors_carry_status_and_message() {
    let err = Model::load("/nonexistent/dir/model.gpt").unwrap_err();
    assert_eq!(err.status, status::IO);
    assert_eq!(err.status_name(), "GPT_ERR_IO");
    assert!(err.message.contains("model.gpt"), "{}", err.message);
    assert!(err.to_string().starts_with("GPT_ERR_IO: "));
    let err = Model::from_bytes(b"definitely not a model", &ModelParams::new()).unwrap_err();
    assert_eq!(err.status, status::FORMAT);
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn forward_and_generate() {
    let model = model_or_skip!();
    let v = model.vocab_size() as usize;
    let prompt = model.tokenize("the Lord").unwrap();
    let mut ctx = model.context(&CtxParams::new().max_seq(64)).unwrap();
    let last = ctx.forward(&prompt).unwrap();
    assert_eq!(last.len(), v);
    assert_eq!(ctx.seq_len(0), prompt.len() as u32);
    ctx.reset();
    let all = ctx.forward_all(&prompt).unwrap();
    assert_eq!(all.len(), v * prompt.len());
    for (a, b) in all[(prompt.len() - 1) * v..].iter().zip(&last) {
        assert!((a - b).abs() < 1e-4);
    }

    // Greedy generation is the argmax of forward's logits.
    ctx.reset();
    let greedy = SamplingParams::new().temperature(0.0).ignore_eos(true);
    let mut seen = Vec::new();
    let toks = ctx
        .generate(&prompt, 8, &greedy, |t| {
            seen.push(t);
            true
        })
        .unwrap();
    assert_eq!(toks.len(), 8);
    assert_eq!(seen, toks);
    let argmax = last
        .iter()
        .enumerate()
        .fold(0, |best, (i, &x)| if x > last[best] { i } else { best });
    assert_eq!(toks[0] as usize, argmax);
    assert_eq!(ctx.seq_len(0), (prompt.len() + 8 - 1) as u32);

    // Stopping from the callback, stop tokens, seeds.
    ctx.reset();
    let mut n = 0;
    let three = ctx
        .generate(&prompt, 8, &greedy, |_| {
            n += 1;
            n < 3
        })
        .unwrap();
    assert_eq!(three, toks[..3].to_vec());
    ctx.reset();
    let stopped = ctx
        .generate(&prompt, 8, &greedy.clone().stop_tokens(&[toks[1]]), |_| true)
        .unwrap();
    assert_eq!(stopped, toks[..2].to_vec());
    let sampled = SamplingParams::new()
        .temperature(1.0)
        .top_k(0)
        .top_p(1.0)
        .min_p(0.0)
        .seed(9)
        .ignore_eos(true);
    ctx.reset();
    let a = ctx.generate(&prompt, 16, &sampled, |_| true).unwrap();
    ctx.reset();
    let b = ctx.generate(&prompt, 16, &sampled, |_| true).unwrap();
    assert_eq!(a, b);

    // Stop strings (against the rule, computed from the run above), penalties, bias.
    let texts: Vec<Vec<u8>> = (0..toks.len())
        .map(|k| {
            model
                .detokenize_bytes(&toks[..=k], sys::GPT_DETOKENIZE_CONTINUE)
                .unwrap()
        })
        .collect();
    let whole = texts.last().unwrap().clone();
    if let Some(stop) = std::str::from_utf8(&whole[whole.len() / 2..])
        .ok()
        .and_then(|t| t.chars().next())
        .map(|c| c.to_string())
    {
        let at = texts.iter().find_map(|t| find(t, stop.as_bytes())).unwrap();
        let want = texts.iter().filter(|t| t.len() <= at).count();
        ctx.reset();
        let with_stop = greedy.clone().stop_strings(&[stop.as_str()]).unwrap();
        let got = ctx.generate(&prompt, 8, &with_stop.clone(), |_| true).unwrap();
        assert_eq!(got, toks[..want].to_vec());
    }
    assert!(greedy.clone().stop_strings(&["a\0b"]).is_err());
    ctx.reset();
    let forced = ctx
        .generate(&prompt, 4, &greedy.clone().logit_bias(&[(42, 500.0)]), |_| true)
        .unwrap();
    assert_eq!(forced, vec![42; 4]);
    ctx.reset();
    let fresh = ctx
        .generate(&prompt, 12, &greedy.clone().presence_penalty(1000.0), |_| true)
        .unwrap();
    let distinct: std::collections::HashSet<_> = fresh.iter().collect();
    assert_eq!(distinct.len(), 12);
    ctx.reset();
    let err = ctx
        .generate(&prompt, 4, &greedy.clone().frequency_penalty(f32::NAN), |_| true)
        .unwrap_err();
    assert!(err.message.contains("frequency_penalty"), "{}", err.message);
    match model.chat_template(&[("user", "Hi")], true) {
        Ok(text) => assert!(text.contains("Hi")),
        Err(e) => assert_eq!(e.status, status::UNSUPPORTED, "{}", e.message),
    }

    // Errors on a context: the context's message.
    let mut tiny = model.context(&CtxParams::new().max_seq(2)).unwrap();
    let err = tiny.forward(&[1, 2, 3]).unwrap_err();
    assert_eq!(err.status, status::CONTEXT_FULL);
    assert!(err.message.contains("max_seq"), "{}", err.message);
    assert_eq!(
        tiny.forward_batch(&[1, 2], 2, 0, None).unwrap_err().status,
        status::INVALID_ARG
    );
    let mut small = [0f32; 3];
    assert_eq!(
        tiny.forward_batch(&[1], 1, 0, Some(&mut small)).unwrap_err().status,
        status::INVALID_ARG
    );
}

#[test]
fn panic_in_callback_is_resumed() {
    let model = model_or_skip!();
    let mut ctx = model.context(&CtxParams::new().max_seq(32)).unwrap();
    let prompt = model.tokenize("the").unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ctx.generate(&prompt, 8, &SamplingParams::new().temperature(0.0), |_| panic!("boom"))
            .ok();
    }));
    assert!(r.is_err());
    // The context is still usable.
    ctx.reset();
    assert_eq!(ctx.forward(&prompt).unwrap().len(), model.vocab_size() as usize);
}

#[test]
fn from_bytes_and_threads() {
    let path = match model_path() {
        Some(p) => p,
        None => return,
    };
    let bytes = std::fs::read(&path).unwrap();
    let params = ModelParams::new().device(Device::Cpu);
    let model = Arc::new(Model::from_bytes(&bytes, &params).unwrap());
    drop(bytes);
    let sampling = SamplingParams::new().temperature(0.8).seed(3).ignore_eos(true);
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let model = Arc::clone(&model);
            let sampling = sampling.clone();
            std::thread::spawn(move || {
                let mut ctx = model.context(&CtxParams::new().max_seq(32)).unwrap();
                let prompt = model.tokenize("the Lord").unwrap();
                ctx.generate(&prompt, 10, &sampling, |_| true).unwrap()
            })
        })
        .collect();
    let results: Vec<Vec<i32>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(results[0].len(), 10);
    assert!(results.iter().all(|r| r == &results[0]));
    // A context moves to another thread (Send).
    let model2 = Model::load_with(&path, &params).unwrap();
    let ctx = model2.context(&CtxParams::new().max_seq(16)).unwrap();
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut ctx = ctx;
            ctx.forward(&[1, 2]).unwrap();
        });
    });
}
