//! Streams a completion: cargo run --example generate -- MODEL [PROMPT] [N]
use libgpt::{CtxParams, Model, SamplingParams};
use std::io::Write;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 2 {
        eprintln!("usage: generate MODEL [PROMPT] [N]");
        std::process::exit(2);
    }
    let prompt_text = args.get(2).map(String::as_str).unwrap_or("In the beginning");
    let n: u32 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(48);

    let model = Model::load(&args[1])?; // device: the first GPU if any, else the CPU
    eprintln!("{:?}", model);
    let max_seq = model.info().context_length().min(512); // the KV cache is sized here, once
    let mut ctx = model.context(&CtxParams::new().max_seq(max_seq))?;
    let mut detok = model.detokenizer()?;
    let prompt = model.tokenize(prompt_text)?;

    print!("{}", prompt_text);
    let start = Instant::now();
    let tokens = ctx.generate(&prompt, n, &SamplingParams::new().temperature(0.8).seed(1), |token| {
        print!("{}", detok.push(token).unwrap_or_default());
        std::io::stdout().flush().ok();
        true
    })?;
    println!("{}", detok.flush()?);
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{} tokens in {:.3} s: {:.1} tokens/s",
        tokens.len(),
        secs,
        tokens.len() as f64 / secs
    );
    Ok(())
}
